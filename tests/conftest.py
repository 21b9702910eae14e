"""Suite-wide options. `--long` runs the sweep, fuzz and accuracy tests at
their full local size; without it they run the bounded size CI runs."""
import pytest


def pytest_addoption(parser):
    parser.addoption("--long", action="store_true", default=False,
                     help="run the differential sweep, fuzz and accuracy tests at full size (slow)")


@pytest.fixture(scope="session")
def long_mode(request):
    return request.config.getoption("--long")
