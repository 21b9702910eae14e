"""Suite-wide options. `--long` runs the sweep, fuzz and accuracy tests at
their full local size; without it they run the bounded size CI runs."""
import pytest


def pytest_addoption(parser):
    parser.addoption("--long", action="store_true", default=False,
                     help="run the differential sweep, fuzz and accuracy tests at full size (slow)")


@pytest.fixture(scope="session")
def long_mode(request):
    return request.config.getoption("--long")


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    """Runs the test at 1, 2 and 3 ember threads (a kernel's serial and parallel paths), then restores the count."""
    import ember
    prev = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(prev)
