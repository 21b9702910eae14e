"""A zoo of small real models, written once over a library argument (`ember` or `torch`), so the
integration tests build the same model in both and compare reprs, names, outputs and gradients.

`zoo(lib)` returns {name: ZooEntry}; `entry.build()` makes the model, `entry.inputs(rng)` gives the
NumPy inputs (a tuple) and `entry.out_shape` the expected output shape."""
import types

import numpy as np

_made = {}


def zoo(lib):
    """The zoo of `lib` (ember or torch): an ordered {name: ZooEntry}."""
    if lib.__name__ not in _made:
        _made[lib.__name__] = _define(lib)
    return _made[lib.__name__]


def has_recurrent(lib):
    """Whether `lib` has nn.LSTM (the frozen C++ build of a branch may lack its fused kernel)."""
    return hasattr(lib.nn, "LSTM")


def to_lib(lib, value):
    """A tensor of `lib` with value's data (value: a tensor of either library, or an array)."""
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return lib.tensor(np.asarray(value))


def entry(build, inputs, out_shape):
    return types.SimpleNamespace(build=build, inputs=inputs, out_shape=out_shape)


def _images(*shape):
    return lambda rng: (rng.standard_normal(shape).astype(np.float32),)


def _tokens(vocab, *shape):
    return lambda rng: (rng.integers(1, vocab, shape).astype(np.int64),)


def _define(lib):  # noqa: C901 (one class per zoo model, written as in a tutorial)
    nn, F = lib.nn, lib.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 10))

        def forward(self, x):
            return self.net(x)

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, kernel_size=5, padding=2)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
            x = lib.flatten(x, 1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    class VGGish(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8, momentum=0.2), nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=2, stride=2), nn.Dropout2d(0.1))
            self.classifier = nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Dropout(p=0.5), nn.Linear(8, 5))

        def forward(self, x):
            return self.classifier(self.features(x))

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            self.layer1 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 16, stride=2))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(16, 4)

        def forward(self, x):
            x = self.avgpool(self.layer1(self.stem(x)))
            return self.fc(x.flatten(1))

    class TextClassifier(nn.Module):
        def __init__(self, vocab=50, dim=16, classes=4):
            super().__init__()
            self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
            self.fc = nn.Linear(dim, classes)

        def forward(self, tokens):
            return self.fc(self.embedding(tokens).mean(dim=1))

    class LSTMTagger(nn.Module):
        def __init__(self, vocab=30, dim=8, hidden=12, tags=5):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True, bidirectional=True)
            self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
            self.out = nn.Linear(hidden, tags)

        def forward(self, tokens):
            h, _ = self.lstm(self.embed(tokens))
            h, _ = self.gru(h)
            return F.log_softmax(self.out(h), dim=-1)

    class TransformerClassifier(nn.Module):
        def __init__(self, vocab=40, d_model=16, classes=3):
            super().__init__()
            self.embed = nn.Embedding(vocab, d_model)
            layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.head = nn.Linear(d_model, classes)

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens)).mean(1))

    class CausalSelfAttention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            # No bias (nanoGPT's bias=False): a key bias has a zero gradient that Adam would scale rounding noise up from.
            self.qkv = nn.Linear(dim, 3 * dim, bias=False)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class GPTBlock(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.ln_1 = nn.LayerNorm(dim)
            self.attn = CausalSelfAttention(dim, heads)
            self.ln_2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim),
                                     nn.Dropout(0.1))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class TinyGPT(nn.Module):
        def __init__(self, vocab=32, block=8, dim=16, heads=2, layers=2):
            super().__init__()
            self.wte = nn.Embedding(vocab, dim)
            self.wpe = nn.Parameter(lib.zeros(1, block, dim))
            self.blocks = nn.ModuleList([GPTBlock(dim, heads) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(dim, eps=1e-6)
            self.lm_head = nn.Linear(dim, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # weight tying, as GPT-2

        def forward(self, idx):
            x = self.wte(idx) + self.wpe[:, :idx.shape[1]]
            for block in self.blocks:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    class ConvAutoencoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(True),
                                         nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.ReLU(True))
            self.decoder = nn.Sequential(nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1), nn.ReLU(True),
                                         nn.ConvTranspose2d(4, 1, 4, stride=2, padding=1, bias=False), nn.Sigmoid())

        def forward(self, x):
            return self.decoder(self.encoder(x))

    class ContainerNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleDict({"enc": nn.Linear(6, 8), "act": nn.Tanh()})
            self.stack = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
            self.stack.append(nn.Softplus(beta=2.0))
            self.gains = nn.ParameterList([nn.Parameter(lib.ones(8)), nn.Parameter(lib.full((8,), 0.5))])
            self.affine = nn.ParameterDict({"scale": nn.Parameter(lib.ones(8)), "shift": nn.Parameter(lib.zeros(8))})
            self.head = nn.Linear(8, 8)
            self.tail = nn.Linear(8, 8)
            self.tail.weight = self.head.weight  # shared weight: one parameter, two state_dict keys

        def forward(self, x):
            x = self.layers["act"](self.layers["enc"](x))
            for layer, gain in zip(self.stack, self.gains):
                x = layer(x) * gain
            x = self.stack[-1](x) * self.affine["scale"] + self.affine["shift"]
            return self.tail(F.relu(self.head(x)))

    class BufferNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.register_buffer("running_mean", lib.zeros(4))
            self.register_buffer("steps", lib.tensor(0))
            self.register_buffer("mask", lib.tensor([1.0, 0.0, 1.0, 1.0]), persistent=False)
            self.register_buffer("unused", None)

        def forward(self, x):
            if self.training:
                with lib.no_grad():
                    self.running_mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
                    self.steps += 1
            return self.fc((x - self.running_mean) * self.mask)

    class NormZoo(nn.Module):
        # Ordered so that no parameter's gradient is zero by construction (a norm removing its shift).
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(4, elementwise_affine=False)
            self.conv = nn.Conv2d(3, 8, 1, bias=False)
            self.inorm = nn.InstanceNorm2d(8, affine=True, track_running_stats=True)
            self.prelu = nn.PReLU(8, init=0.1)
            self.gn = nn.GroupNorm(2, 8)
            self.rms = nn.RMSNorm([8, 4, 4], eps=1e-5)

        def forward(self, x):
            x = self.prelu(self.inorm(self.conv(self.ln(x))))
            return self.rms(self.gn(x))

    class UpsampleDecoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(10, 8 * 4 * 4)
            self.unflatten = nn.Unflatten(1, (8, 4, 4))
            self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(8, 16, 3, padding=1),
                                    nn.LeakyReLU(0.1), nn.PixelShuffle(2), nn.ZeroPad2d((1, 0, 1, 0)),
                                    nn.Conv2d(4, 3, 2), nn.Upsample(size=(20, 20), mode="bilinear", align_corners=False),
                                    nn.Hardtanh(-2.0, 2.0))

        def forward(self, z):
            return self.up(self.unflatten(self.fc(z)))

    class BilinearNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.bilinear = nn.Bilinear(6, 5, 7)
            self.norm = nn.BatchNorm1d(7, affine=False, momentum=None)
            self.out = nn.Sequential(nn.SiLU(), nn.Linear(7, 3), nn.LogSoftmax(dim=1))

        def forward(self, a, b):
            return self.out(self.norm(self.bilinear(a, b)))

    class SignalNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.ReflectionPad1d(2), nn.Conv1d(2, 6, 5), nn.BatchNorm1d(6), nn.ELU(),
                                      nn.MaxPool1d(2), nn.ReplicationPad1d(1), nn.Conv1d(6, 6, 3, dilation=1, groups=2),
                                      nn.AdaptiveAvgPool1d(4), nn.Flatten(), nn.Linear(24, 2))

        def forward(self, x):
            return self.body(x)

    zoo_models = {
        "mlp": entry(MLP, _images(3, 8, 8), (3, 10)),
        "lenet5": entry(LeNet5, _images(2, 1, 28, 28), (2, 10)),
        "vggish": entry(VGGish, _images(3, 3, 8, 8), (3, 5)),
        "resnet_block": entry(TinyResNet, _images(2, 3, 8, 8), (2, 4)),
        "text_classifier": entry(TextClassifier, _tokens(50, 3, 7), (3, 4)),
        "lstm_tagger": entry(LSTMTagger if has_recurrent(lib) else None, _tokens(30, 2, 6), (2, 6, 5)),
        "transformer_classifier": entry(TransformerClassifier, _tokens(40, 2, 5), (2, 3)),
        "tiny_gpt": entry(TinyGPT, _tokens(32, 2, 8), (2, 8, 32)),
        "conv_autoencoder": entry(ConvAutoencoder, _images(2, 1, 8, 8), (2, 1, 8, 8)),
        "containers": entry(ContainerNet, _images(4, 6), (4, 8)),
        "buffers": entry(BufferNet, _images(5, 4), (5, 4)),
        "norms": entry(NormZoo, _images(2, 3, 4, 4), (2, 8, 4, 4)),
        "upsample_decoder": entry(UpsampleDecoder, _images(2, 10), (2, 3, 20, 20)),
        "bilinear": entry(BilinearNet, lambda rng: (rng.standard_normal((4, 6)).astype(np.float32),
                                                   rng.standard_normal((4, 5)).astype(np.float32)), (4, 3)),
        "signal": entry(SignalNet, _images(3, 2, 16), (3, 2)),
    }
    return zoo_models


def without_dropout(model):
    """Sets every dropout probability of `model` to 0 (train mode then is deterministic, so both libraries agree)."""
    for module in model.modules():
        if type(module).__name__ in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"):
            module.p = 0.0
        if type(module).__name__ == "MultiheadAttention":
            module.dropout = 0.0
    return model
