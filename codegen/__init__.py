"""ember's generator: ops.yaml + derivatives.yaml -> C++, bindings, stubs, docs."""
