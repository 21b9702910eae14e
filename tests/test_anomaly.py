"""Anomaly mode (ember.autograd.detect_anomaly / set_detect_anomaly) as PyTorch's:
forward tracebacks in grad_fn.metadata["traceback_"], the NaN check of every
node's results in backward, the warning with the forward traceback before a
node's error propagates, nesting, the global (all threads) mode, and no effect
when off. Messages are compared with PyTorch 2.13 when it is installed."""
import re
import threading
import warnings

import pytest

import ember
from ember.autograd import Function

try:
    import torch
except ImportError:  # the comparisons are skipped
    torch = None


@pytest.fixture(autouse=True)
def anomaly_off_around():
    assert not ember.is_anomaly_enabled()
    yield
    assert not ember.is_anomaly_enabled(), "a test left anomaly mode on"
    assert ember.is_anomaly_check_nan_enabled()


def zero_and_one(lib=ember):
    return lib.tensor([0.0, 1.0], requires_grad=True)


def backward_collecting_warnings(loss):
    """Runs loss.backward(); returns (the exception it raised, the warnings' messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            loss.backward()
            error = None
        except Exception as e:  # noqa: BLE001  (the test looks at it)
            error = e
    return error, [(w.category, str(w.message)) for w in caught]


class NanBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * float("nan")


class FailingBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("backward went wrong")


def forward_with_mul(x, w):
    return x * w  # the line the traceback names


# ---------------------------------------------------------------- the switches
def test_off_by_default_and_the_module_functions():
    assert ember.is_anomaly_enabled() is False
    assert ember.is_anomaly_check_nan_enabled() is True
    ember.set_anomaly_enabled(True, check_nan=False)
    try:
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
    finally:
        ember.set_anomaly_enabled(False)
    assert ember.is_anomaly_check_nan_enabled()  # check_nan defaults to True, as PyTorch


def test_set_detect_anomaly_is_a_function_and_a_context_manager():
    mode = ember.autograd.set_detect_anomaly(True, check_nan=False)
    assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
    ember.autograd.set_detect_anomaly(False)
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
    with mode:  # entering changes nothing; leaving restores what the constructor found
        pass
    assert not ember.is_anomaly_enabled()


def test_nesting_restores_each_level():
    with ember.autograd.set_detect_anomaly(True):
        assert ember.is_anomaly_enabled()
        with ember.autograd.set_detect_anomaly(False):
            assert not ember.is_anomaly_enabled()
            with pytest.warns(UserWarning):
                inner = ember.autograd.detect_anomaly(check_nan=False)
            with inner:
                assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
            assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
        assert ember.is_anomaly_enabled()
    assert not ember.is_anomaly_enabled()


def test_detect_anomaly_warns_that_it_is_slow():
    with pytest.warns(UserWarning) as caught:
        mode = ember.autograd.detect_anomaly()
    assert str(caught[0].message) == ("Anomaly Detection has been enabled. This mode will increase the runtime "
                                      "and should only be enabled for debugging.")
    assert caught[0].filename == __file__  # stacklevel=2: the caller's line
    assert not ember.is_anomaly_enabled()  # making it does not enable
    with mode:
        assert ember.is_anomaly_enabled()
    assert not ember.is_anomaly_enabled()


def test_detect_anomaly_as_a_decorator():
    with pytest.warns(UserWarning):
        @ember.autograd.detect_anomaly(check_nan=False)
        def inside():
            return ember.is_anomaly_enabled(), ember.is_anomaly_check_nan_enabled()

    assert inside() == (True, False)
    assert not ember.is_anomaly_enabled()
    with ember.autograd.set_detect_anomaly(True):  # restores the mode it found
        assert inside() == (True, False)
        assert ember.is_anomaly_check_nan_enabled()


def test_the_mode_is_global_as_pytorch():
    seen = []
    with ember.autograd.set_detect_anomaly(True):
        thread = threading.Thread(target=lambda: seen.append(ember.is_anomaly_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]
    if torch is not None:
        seen_torch = []
        with torch.autograd.set_detect_anomaly(True):
            thread = threading.Thread(target=lambda: seen_torch.append(torch.is_anomaly_enabled()))
            thread.start()
            thread.join()
        assert seen_torch == seen


def test_nodes_made_on_another_thread_record_their_traceback():
    made = []

    def work():
        x = zero_and_one()
        made.append(x * 2)

    with ember.autograd.set_detect_anomaly(True):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    stack = made[0].grad_fn.metadata["traceback_"]
    assert "made.append(x * 2)" in stack[-1]


# ---------------------------------------------------------------- tracebacks
def test_every_node_records_the_forward_traceback():
    x, w = zero_and_one(), ember.tensor([2.0, 3.0])
    with ember.autograd.set_detect_anomaly(True):
        y = forward_with_mul(x, w)
        s = y.sum()
    stack = y.grad_fn.metadata["traceback_"]
    assert isinstance(stack, list) and all(isinstance(frame, str) for frame in stack)
    assert f'File "{__file__}"' in stack[-1] and "in forward_with_mul" in stack[-1]
    assert "return x * w  # the line the traceback names" in stack[-1]
    assert "y = forward_with_mul(x, w)" in stack[-2]  # the caller's frame too
    assert "s = y.sum()" in s.grad_fn.metadata["traceback_"][-1]
    accumulator = y.grad_fn.next_functions[0][0]
    assert accumulator.name() == "torch::autograd::AccumulateGrad"  # PyTorch's name()
    assert "traceback_" in accumulator.metadata  # as PyTorch: made in anomaly mode, with the first use
    assert "parent_" not in y.grad_fn.metadata  # made by a forward, not by a backward


def test_custom_function_node_records_the_forward_traceback():
    x = zero_and_one()
    with ember.autograd.set_detect_anomaly(True):
        y = NanBackward.apply(x)
    stack = y.grad_fn.metadata["traceback_"]
    assert any("y = NanBackward.apply(x)" in frame for frame in stack)


def test_no_effect_when_off():
    x = zero_and_one()
    y = x / x
    assert "traceback_" not in y.grad_fn.metadata
    error, caught = backward_collecting_warnings(y.sum())
    assert error is None and caught == []
    assert x.grad.isnan().tolist() == [True, False]  # the NaN passes silently
    error, caught = backward_collecting_warnings(FailingBackward.apply(zero_and_one()).sum())
    assert isinstance(error, ValueError) and caught == []


# ---------------------------------------------------------------- the NaN check
def test_nan_in_a_generated_node_names_the_node_and_its_output():
    x, w = zero_and_one(), ember.tensor([float("nan"), 1.0])
    with ember.autograd.set_detect_anomaly(True):
        loss = forward_with_mul(x, w).sum()
        error, caught = backward_collecting_warnings(loss)
    assert isinstance(error, RuntimeError)
    assert str(error) == "Function 'MulBackward0' returned nan values in its 0th output."
    assert len(caught) == 1 and caught[0][0] is UserWarning
    message = caught[0][1]
    assert message.startswith("Error detected in MulBackward0. Traceback of forward call that caused the error:\n")
    assert "return x * w  # the line the traceback names" in message
    assert x.grad is None  # the error stopped backward before the leaf


def test_nan_names_the_output_position():
    x = zero_and_one()
    with ember.autograd.set_detect_anomaly(True):
        error, _ = backward_collecting_warnings((x / x).sum())
    assert str(error) == "Function 'DivBackward0' returned nan values in its 1th output."


def test_nan_in_a_custom_function_backward():
    x = zero_and_one()
    with ember.autograd.set_detect_anomaly(True):
        y = NanBackward.apply(x)
        error, caught = backward_collecting_warnings(y.sum())
    assert isinstance(error, RuntimeError)
    assert str(error) == "Function 'NanBackwardBackward' returned nan values in its 0th output."
    assert caught[0][1].startswith("Error detected in NanBackwardBackward. Traceback of forward call")
    assert "y = NanBackward.apply(x)" in caught[0][1]


def test_check_nan_false_lets_nan_through():
    x = zero_and_one()
    with ember.autograd.set_detect_anomaly(True, check_nan=False):
        error, caught = backward_collecting_warnings((x / x).sum())
    assert error is None and caught == []
    assert x.grad.isnan().tolist() == [True, False]


def test_integer_and_undefined_outputs_are_not_checked():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.set_detect_anomaly(True):
        y = x * ember.tensor([3, 4])  # the integer operand gets no gradient (undefined output)
        y.sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]


# ---------------------------------------------------------------- errors in backward
def test_an_error_in_backward_warns_with_the_forward_traceback_then_propagates():
    x = zero_and_one()
    with ember.autograd.set_detect_anomaly(True):
        y = FailingBackward.apply(x)
        error, caught = backward_collecting_warnings(y.sum())
    assert isinstance(error, ValueError) and str(error) == "backward went wrong"
    assert len(caught) == 1 and caught[0][0] is UserWarning
    assert caught[0][1].startswith("Error detected in FailingBackwardBackward. Traceback of forward call that "
                                   "caused the error:\n")
    assert "y = FailingBackward.apply(x)" in caught[0][1]


def test_a_node_made_outside_anomaly_mode_has_no_forward_information():
    x = zero_and_one()
    y = x / x
    with ember.autograd.set_detect_anomaly(True):
        error, caught = backward_collecting_warnings(y.sum())
    assert isinstance(error, RuntimeError)
    assert caught[0][1] == ("Error detected in DivBackward0. No forward pass information available. "
                            "Enable detect anomaly during forward pass for more information.")


def test_warnings_as_errors_keep_the_original_error():
    x = zero_and_one()
    with ember.autograd.set_detect_anomaly(True):
        loss = FailingBackward.apply(x).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="backward went wrong"):
                loss.backward()


def test_nodes_made_by_a_backward_name_their_parent():
    x = zero_and_one()
    with ember.autograd.set_detect_anomaly(True):
        y = x.sqrt()
        (g,) = ember.autograd.grad(y.sum(), x, create_graph=True)
        parent = g.grad_fn.metadata["parent_"]
        assert parent.name() == "SqrtBackward0"
        error, caught = backward_collecting_warnings((g * 0).sum())
    assert str(error) == "Function 'DivBackward0' returned nan values in its 1th output."
    assert len(caught) == 2
    assert caught[0][1].startswith("Error detected in DivBackward0. Traceback of forward call that caused the error:")
    assert "ember.autograd.grad(y.sum(), x, create_graph=True)" in caught[0][1]
    assert caught[1][1].startswith("\n\nPrevious calculation was induced by SqrtBackward0. Traceback of forward "
                                   "call that induced the previous calculation:\n")
    assert "y = x.sqrt()" in caught[1][1]


# ---------------------------------------------------------------- against PyTorch
def first_and_last_line(text):
    """A warning's first line and its last frame's code, without PyTorch's '(Triggered internally ...)'."""
    text = re.sub(r" \(Triggered internally at [^)]*\)$", "", text)
    lines = text.rstrip("\n").split("\n")
    return lines[0], lines[-1].strip()


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("case", ["nan", "no_forward_info", "double_backward"])
def test_messages_match_pytorch(case):
    def run(lib):
        x = zero_and_one(lib)
        if case == "no_forward_info":
            y = x / x
        with lib.autograd.set_detect_anomaly(True):
            if case == "nan":
                y = x / x
            elif case == "double_backward":
                y = x.sqrt()
                (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
                y = g * 0
            error, caught = backward_collecting_warnings(y.sum())
        return type(error), str(error), [(category, first_and_last_line(m)) for category, m in caught
                                         if "grad(" not in m]

    assert run(ember) == run(torch)
