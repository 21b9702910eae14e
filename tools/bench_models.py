"""Issue 12's bench rows: whole training steps (forward, backward, optimizer step) of small
real models, written once against the torch API and built in each library from its own
`nn`, `nn.functional` and `optim`. A library without nn or optim leaves the row empty."""
from bench_rows import TORCHLIKE_COLUMNS, Bench

SECTION = "training steps (forward, backward, optimizer step)"


def _models(nn, F):
    """The model classes, defined over one library's nn and functional."""

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
            self.classifier = nn.Sequential(
                nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))

        def forward(self, x):
            return self.classifier(self.features(x))

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))

    class ResNet3(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
            self.blocks = nn.Sequential(Block(32, 32, 1), Block(32, 64, 2), Block(64, 128, 2))
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            x = self.blocks(self.stem(x))
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    class LSTMLM(nn.Module):
        def __init__(self, vocab, width):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.lstm = nn.LSTM(width, width, num_layers=2)
            self.head = nn.Linear(width, vocab)

        def forward(self, tokens):
            out, _ = self.lstm(self.embed(tokens))
            return self.head(out)

    class GPTBlock(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab, width, heads, layers, block):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(block, width)
            self.blocks = nn.Sequential(*[GPTBlock(width, heads) for _ in range(layers)])
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos.weight[: idx.shape[1]]
            return self.head(self.ln(self.blocks(x)))

    return LeNet5, ResNet3, LSTMLM, GPT


def _training_step(lib, make_model, make_optimizer, make_batch, flatten_logits=False):
    """A build() for Bench: one step of model, optimizer and a fixed batch, or None without nn/optim."""
    t = lib.mod
    if lib.is_numpy or not hasattr(t.nn, "Module") or not hasattr(t, "optim"):
        return None
    t.manual_seed(0)
    model = make_model(t.nn, t.nn.functional)
    optimizer = make_optimizer(t.optim, model.parameters())
    inputs, target = make_batch(lib)

    def step():
        optimizer.zero_grad()
        logits = model(inputs)
        if flatten_logits:
            logits = logits.reshape(-1, logits.shape[-1])
        t.nn.functional.cross_entropy(logits, target.reshape(-1)).backward()
        optimizer.step()
    return step


def _classes(lib, n, count):
    return lib.mod.randint(0, count, (n,), **lib.device_kwargs())


def model_benches():
    def mlp(lib):
        def model(nn, F):
            return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
        return _training_step(lib, model, lambda optim, p: optim.Adam(p, lr=1e-3),
                              lambda lib: (lib.randn(128, 784), _classes(lib, 128, 10)))

    def lenet(lib):
        return _training_step(lib, lambda nn, F: _models(nn, F)[0](),
                              lambda optim, p: optim.SGD(p, lr=0.01, momentum=0.9),
                              lambda lib: (lib.randn(64, 1, 28, 28), _classes(lib, 64, 10)))

    def resnet(lib):
        return _training_step(lib, lambda nn, F: _models(nn, F)[1](),
                              lambda optim, p: optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=5e-4),
                              lambda lib: (lib.randn(32, 3, 32, 32), _classes(lib, 32, 10)))

    def lstm(lib):
        vocab = 10_000
        return _training_step(lib, lambda nn, F: _models(nn, F)[2](vocab, 256),
                              lambda optim, p: optim.SGD(p, lr=1.0),
                              lambda lib: (lib.mod.randint(0, vocab, (35, 20)), lib.mod.randint(0, vocab, (35, 20))),
                              flatten_logits=True)

    def gpt(lib):
        vocab, block = 65, 128
        return _training_step(lib, lambda nn, F: _models(nn, F)[3](vocab, 256, 4, 4, block),
                              lambda optim, p: optim.AdamW(p, lr=3e-4),
                              lambda lib: (lib.mod.randint(0, vocab, (16, block)),
                                           lib.mod.randint(0, vocab, (16, block))),
                              flatten_logits=True)

    rows = [("MLP 784-512-256-10 b128 Adam", mlp), ("LeNet-5 b64 1x28x28 SGD", lenet),
            ("ResNet-3block b32 3x32x32 SGD", resnet), ("LSTM LM 2x256 vocab 10k seq35 b20 SGD", lstm),
            ("GPT 4L 4H 256d block128 b16 AdamW", gpt)]
    return [Bench(SECTION, f"train step {name}", "ms", build, columns=TORCHLIKE_COLUMNS) for name, build in rows]


MODEL_ROWS = tuple(bench.name for bench in model_benches())
