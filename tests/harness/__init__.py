"""The generic operator test harness: ops.yaml in, pytest cases out.

spec.py      the spec as codegen's model reads it (codegen/model.py, the one reader of ops.yaml
             and derivatives.yaml), and what the tests ask of an op: input roles, dtypes to run
dtypes.py    PyTorch's type promotion, written out (no torch at test time)
rules.py     the dtype an op computes in and returns, from its promote/reduce rules
samples.py   sample generators by name, `cases:`, value domains
refs.py      NumPy helpers for `ref:` expressions
tensors.py   make_tensor / to_numpy and building inputs with their layouts (imports ember)
run.py       calling an op in each form, its reference, and the comparisons
gradcheck.py float64 gradcheck and gradgradcheck of an op, through ember.autograd.gradcheck
collect.py   the case lists test_ops.py parametrises over
lint.py      checks that each `test:` entry is runnable (codegen checks the rest)
"""
