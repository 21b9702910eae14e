"""A nanoGPT-style character language model in plain PyTorch: causal self-attention through
F.scaled_dot_product_attention, weight tying, AdamW with decay/no-decay groups, gradient clipping,
a warmup + cosine LambdaLR schedule and greedy generation under @torch.no_grad().

tests/test_pytorch_script.py runs it unchanged under torch and under ember and compares the printed
lines; the weights come from a formula (not a random generator), so both runs start alike."""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F

TEXT = ("the quick brown fox jumps over the lazy dog. " * 3 + "pack my box with five dozen liquor jugs. " * 3)
BLOCK, EMBED, HEADS, LAYERS, STEPS, BATCH = 16, 24, 3, 2, 40, 8


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(EMBED, 3 * EMBED)
        self.c_proj = nn.Linear(EMBED, EMBED)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(EMBED, dim=2)
        k = k.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        q = q.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        v = v.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(EMBED)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(EMBED)
        self.mlp = nn.Sequential(nn.Linear(EMBED, 4 * EMBED), nn.GELU(), nn.Linear(4 * EMBED, EMBED))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, EMBED),
            wpe=nn.Embedding(BLOCK, EMBED),
            h=nn.ModuleList([Block() for _ in range(LAYERS)]),
            ln_f=nn.LayerNorm(EMBED),
        ))
        self.lm_head = nn.Linear(EMBED, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        # A fixed hash pattern instead of normal_(std=0.02), so every library starts from the same weights.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            with torch.no_grad():
                n = module.weight.numel()
                pattern = ((torch.arange(n) * 7919 + 13) % 997).float() / 997 * 0.1 - 0.05  # integer hash
                module.weight.copy_(pattern.view_as(module.weight))
        if isinstance(module, nn.Linear) and module.bias is not None:
            torch.nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -BLOCK:])
            idx_next = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def main():
    chars = sorted(set(TEXT))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    print(f"vocab {len(chars)}, {len(data)} characters")

    model = GPT(len(chars))
    print(model)
    params = {pn: p for pn, p in model.named_parameters() if p.requires_grad}
    decay = [p for p in params.values() if p.dim() >= 2]
    nodecay = [p for p in params.values() if p.dim() < 2]
    print(f"num decayed parameter tensors: {len(decay)}, with {sum(p.numel() for p in decay):,} parameters")
    print(f"num non-decayed parameter tensors: {len(nodecay)}, with {sum(p.numel() for p in nodecay):,} parameters")
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
                                  lr=1e-2, betas=(0.9, 0.95))
    warmup = 5

    def lr_lambda(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warmup) / (STEPS - warmup)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)

    model.train()
    for step in range(STEPS):
        starts = [(step * 13 + i * 29) % (len(data) - BLOCK - 1) for i in range(BATCH)]
        x = torch.stack([data[s:s + BLOCK] for s in starts])
        y = torch.stack([data[s + 1:s + 1 + BLOCK] for s in starts])
        logits, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step % 10 == 0 or step == STEPS - 1:
            print(f"step {step}: loss {loss.item():.4f}, grad norm {norm.item():.4f}, lr {scheduler.get_last_lr()[0]:.6f}")

    model.eval()
    context = torch.tensor([[stoi[c] for c in "the "]], dtype=torch.long)
    out = model.generate(context, 20)[0].tolist()
    print("sample:", repr("".join(chars[i] for i in out)))


if __name__ == "__main__":
    main()
