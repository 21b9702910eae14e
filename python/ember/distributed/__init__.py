"""ember.distributed: the single-process subset of torch.distributed. A process group of world size 1
can be initialised (no rendezvous is needed, so MASTER_ADDR/MASTER_PORT are not read); collectives on it
leave their tensors as they are, which is what they compute on one process. More than one process is
not supported yet (NotImplementedError)."""
import enum
import os

__all__ = [
    "ReduceOp", "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend", "get_rank",
    "get_world_size", "init_process_group", "is_available", "is_initialized",
]

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."
_default_group = None  # the backend name while the default group is initialised


class ReduceOp(enum.Enum):
    """The reductions of all_reduce/reduce (PyTorch's names)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


def is_available():
    """True: ember has the (single-process) distributed package."""
    return True


def is_initialized():
    """Whether the default process group has been initialised."""
    return _default_group is not None


def _env_int(value, name):
    if value != -1:
        return value
    return int(os.environ.get(name, -1))


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Initialise the default process group: world_size (or $WORLD_SIZE) and rank (or $RANK) must be 1 and 0."""
    global _default_group
    if _default_group is not None:
        raise ValueError("trying to initialize the default process group twice!")
    world_size, rank = _env_int(world_size, "WORLD_SIZE"), _env_int(rank, "RANK")
    if world_size not in (-1, 1) or rank not in (-1, 0):
        raise NotImplementedError(
            f"ember.distributed runs one process only (world_size=1, rank=0); got world_size={world_size}, rank={rank}")
    _default_group = backend if backend is not None else "gloo"


def destroy_process_group(group=None):
    """Forget the default process group."""
    global _default_group
    _require_group()
    _default_group = None


def _require_group():
    if _default_group is None:
        raise ValueError(_NOT_INITIALIZED)


def get_rank(group=None):
    """This process's rank: 0."""
    _require_group()
    return 0


def get_world_size(group=None):
    """The number of processes: 1."""
    _require_group()
    return 1


def get_backend(group=None):
    """The backend name given to init_process_group ('gloo' when none was)."""
    _require_group()
    return _default_group


def barrier(group=None, async_op=False, device_ids=None):
    """Wait for every process: with one, returns at once."""
    _require_group()


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over the processes in place: with one, every reduction leaves it as it is."""
    _require_group()


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy `tensor` from rank `src` to every process: with one, nothing moves."""
    _require_group()
