"""A character-level language model learns to spell English words from the word
list that the PyPI package english-words ships (no download at run time), and
prints words it invents as it learns. Two models: an LSTM, and a small GPT built
from causal self-attention blocks over F.scaled_dot_product_attention.

    pip install ".[examples]"
    python examples/char_lm.py --model lstm     # or --model gpt
"""
import argparse
import math
import random

from english_words import get_english_words_set

import ember as torch
from ember import nn
import ember.nn.functional as F

BOUNDARY = "."  # ends every word, and starts a sample


class Vocabulary:
    def __init__(self, words):
        self.chars = [BOUNDARY] + sorted(set("".join(words)))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def encode(self, text):
        return [self.index[c] for c in text]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


class LSTMModel(nn.Module):
    def __init__(self, vocab_size, width=128, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, width)
        self.lstm = nn.LSTM(width, width, num_layers=layers, batch_first=True)
        self.head = nn.Linear(width, vocab_size)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attention = CausalSelfAttention(width, heads)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, width=128, heads=4, layers=3):
        super().__init__()
        self.token = nn.Embedding(vocab_size, width)
        self.position = nn.Embedding(block_size, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab_size)

    def forward(self, tokens):
        x = self.token(tokens) + self.position(torch.arange(tokens.shape[1]))
        return self.head(self.ln(self.blocks(x)))


def batches(stream, block_size, batch_size):
    """Random windows of the encoded word stream: inputs and the next characters."""
    while True:
        starts = torch.randint(0, len(stream) - block_size - 1, (batch_size,))
        rows = torch.stack([stream[s:s + block_size + 1] for s in starts.tolist()])
        yield rows[:, :-1], rows[:, 1:]


@torch.no_grad()
def sample(model, vocab, block_size, count=8, max_length=20, temperature=0.8):
    model.eval()
    words = []
    for _ in range(count):
        ids = vocab.encode(BOUNDARY)
        while len(ids) <= max_length:
            logits = model(torch.tensor([ids[-block_size:]]))[0, -1] / temperature
            ids.append(int(torch.multinomial(F.softmax(logits, dim=-1), 1)))
            if ids[-1] == vocab.index[BOUNDARY]:
                break
        words.append(vocab.decode(ids[1:]).rstrip(BOUNDARY))
    model.train()
    return words


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("lstm", "gpt"), default="lstm")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--report-every", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    words = sorted(get_english_words_set(["web2"], lower=True, alpha=True))
    random.Random(args.seed).shuffle(words)
    vocab = Vocabulary(words)
    stream = torch.tensor(vocab.encode("".join(w + BOUNDARY for w in words)))
    print(f"{len(words)} words, {len(stream)} characters, vocabulary of {len(vocab.chars)}")

    if args.model == "lstm":
        model = LSTMModel(len(vocab.chars))
    else:
        model = GPT(len(vocab.chars), args.block_size)
    print(model)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)

    print(f"a model that knows nothing scores ln({len(vocab.chars)}) = {math.log(len(vocab.chars)):.3f}")
    data, running = batches(stream, args.block_size, args.batch_size), None
    for step in range(1, args.steps + 1):
        inputs, targets = next(data)
        loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()
        if step % args.report_every == 0 or step == args.steps:
            print(f"step {step:5d}  loss {running:.3f}  samples: {' '.join(sample(model, vocab, args.block_size))}")
    return running


if __name__ == "__main__":
    main()
