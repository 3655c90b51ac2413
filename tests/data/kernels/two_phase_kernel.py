"""A kernel that re-tiles between two phases, written for the priors scanner tests (never run)."""

import pypto


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})
def two_phase(x: pypto.Tensor, y: pypto.Tensor):
    pypto.set_vec_tile_shapes(1, 32, 1, 64)
    t = pypto.exp(x)
    pypto.set_vec_tile_shapes(1, 16, 1, 32)
    y[:] = pypto.softmax(t, dim=-1)
