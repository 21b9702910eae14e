"""Hogwild training, as PyTorch's mnist_hogwild: one model whose parameters live in
shared memory is trained by several processes at once, each updating the shared
weights without locks, then evaluated. Data: scikit-learn's bundled 8x8 digits
(1,797 real images, no download). Written with `import ember as torch`.

    pip install ".[examples]"
    python examples/hogwild.py [--epochs 10] [--num-processes 2] [--start-method spawn]
"""
import argparse
import os

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ember as torch
import ember.multiprocessing as mp
import ember.nn.functional as F
from ember import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(20 * 2 * 2, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def load(seed):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # N x 1 x 8 x 8 in [0, 1]
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.25, random_state=seed, stratify=digits.target)
    return (torch.from_numpy(x_train), torch.from_numpy(y_train).long(),
            torch.from_numpy(x_test), torch.from_numpy(y_test).long())


def train(rank, args, model, x, y):
    """One hogwild worker: its own optimizer and gradients, the model's weights shared with the others."""
    torch.manual_seed(args.seed + rank)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.num_processes))  # the workers share the cores
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    for epoch in range(1, args.epochs + 1):
        train_epoch(epoch, args, model, x, y, optimizer)


def train_epoch(epoch, args, model, x, y, optimizer):
    model.train()
    pid = os.getpid()
    order = torch.randperm(len(x))
    for batch_idx, start in enumerate(range(0, len(x), args.batch_size)):
        batch = order[start:start + args.batch_size]
        optimizer.zero_grad()
        loss = F.nll_loss(model(x[batch]), y[batch])
        loss.backward()
        optimizer.step()  # in place: straight into the shared weights
        if batch_idx % args.log_interval == 0:
            print(f"{pid}\tTrain Epoch: {epoch} [{start}/{len(x)} ({100.0 * start / len(x):.0f}%)]"
                  f"\tLoss: {loss.item():.6f}", flush=True)


def test(model, x, y):
    model.eval()
    with torch.no_grad():
        output = model(x)
        test_loss = F.nll_loss(output, y, reduction="sum").item() / len(x)
        correct = int((output.argmax(dim=1) == y).sum())
    print(f"\nTest set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{len(x)} "
          f"({100.0 * correct / len(x):.0f}%)\n")
    return correct / len(x)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10, help="batches between two training log lines")
    parser.add_argument("--num-processes", type=int, default=2, help="how many training processes to use")
    parser.add_argument("--start-method", default="spawn", choices=["spawn", "fork", "forkserver"])
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load(args.seed)
    model = Net()
    # Gradients are allocated lazily, so they are not shared here: each worker has its own.
    model.share_memory()
    print(f"parameters in shared memory: {all(p.is_shared() for p in model.parameters())}")

    ctx = mp.get_context(args.start_method)
    processes = []
    for rank in range(args.num_processes):
        p = ctx.Process(target=train, args=(rank, args, model, x_train, y_train))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    if any(p.exitcode != 0 for p in processes):
        raise RuntimeError(f"a training process failed (exit codes {[p.exitcode for p in processes]})")

    # Once training is complete, the parent's model holds what every worker learned.
    return test(model, x_test, y_test)


if __name__ == "__main__":
    main()
