"""A tutorial-style PyTorch training script (after pytorch/examples' MNIST), on synthetic 12x12 digits.

Plain PyTorch: tests/test_pytorch_script.py runs it unchanged under torch and under ember (with
`import torch` resolving to ember) and compares the printed lines. Data, shuffling and the initial
weights come from formulas, not a random generator, so both libraries start from the same point."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def make_digits(n, offset):
    """n images of shape 1x12x12: a class-dependent stroke pattern plus deterministic 'noise'."""
    labels = (torch.arange(n) * 3 + offset) % 10
    grid = torch.linspace(-1.0, 1.0, 12)
    yy, xx = torch.meshgrid(grid, grid, indexing="ij")
    images = []
    for i, c in enumerate(labels.tolist()):
        angle = c * math.pi / 10
        stroke = torch.exp(-((xx * math.cos(angle) + yy * math.sin(angle)) ** 2) * (4 + c))
        ring = torch.exp(-((xx ** 2 + yy ** 2 - 0.05 * c) ** 2) * 8)
        noise = 0.3 * torch.sin(xx * (i % 7 + 1) * 3.1 + yy * (i % 5 + 2) * 1.7 + i)
        images.append((stroke + (c % 3) * 0.5 * ring + noise).unsqueeze(0))
    return torch.stack(images), labels


def init_weights(m):
    # Reproducible across machines: weights from a formula, scaled like the default 1/sqrt(fan_in).
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        with torch.no_grad():
            fan_in = m.weight[0].numel()
            values = torch.sin(torch.arange(m.weight.numel(), dtype=torch.float32) * 1.37 + 0.5)
            m.weight.copy_(values.view(m.weight.shape) / math.sqrt(fan_in))
            m.bias.fill_(0.01)


def train(args, model, data, target, optimizer, epoch):
    model.train()
    n = data.shape[0]
    order = (torch.arange(n) * 7 + epoch) % n  # a fixed shuffle per epoch
    for batch_idx, start in enumerate(range(0, n, args.batch_size)):
        idx = order[start:start + args.batch_size]
        optimizer.zero_grad()
        output = model(data[idx])
        loss = F.nll_loss(output, target[idx])
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, start + len(idx), n, 100.0 * (start + len(idx)) / n, loss.item()))


def test(model, data, target, criterion):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for start in range(0, data.shape[0], 50):
            output = model(data[start:start + 50])
            test_loss += criterion(output, target[start:start + 50]).item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target[start:start + 50].view_as(pred)).sum().item()
    test_loss /= data.shape[0]
    print("\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n".format(
        test_loss, correct, data.shape[0], 100.0 * correct / data.shape[0]))
    return correct


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST-like Example")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--log-interval", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(1)
    train_x, train_y = make_digits(256, 0)
    test_x, test_y = make_digits(100, 1)
    print("train:", tuple(train_x.shape), train_x.dtype, "labels:", train_y[:10].tolist())

    model = Net()
    model.apply(init_weights)
    print(model)
    print("parameters:", sum(p.numel() for p in model.parameters() if p.requires_grad))
    print("state_dict:", list(model.state_dict().keys()))

    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    criterion = nn.NLLLoss(reduction="sum")
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_x, train_y, optimizer, epoch)
        test(model, test_x, test_y, criterion)
        scheduler.step()
        print("lr:", scheduler.get_last_lr())

    print("running_mean:", [round(v, 4) for v in model.bn1.running_mean.tolist()])
    print("num_batches_tracked:", model.bn1.num_batches_tracked.item())
    print("fc2.bias grad norm: {:.5f}".format(model.fc2.bias.grad.norm().item()))


if __name__ == "__main__":
    main()
