"""Layer norm with module-level constants, written for the priors scanner tests (never run)."""

import pypto
from pypto import set_vec_tile_shapes

TILE = (1, 8, 64)
UNROLL = [16, 4, 1]
RUNTIME = {"run_mode": pypto.RunMode.SIM, "stitch_function_num_initial": 32}
LIMIT = 64
LIMIT = 128  # rebound: not a constant any more


class LayerNorm:
    """Kernels as methods, with nested functions."""

    def kernel(self, x: pypto.Tensor, y: pypto.Tensor):
        set_vec_tile_shapes(*TILE)

        def body(rows: int):
            set_vec_tile_shapes(1, rows, LIMIT)
            for b, p in pypto.loop_unroll(0, 32, 1, unroll_list=UNROLL):
                y[b : b + p] = pypto.layer_norm(x[b : b + p])

        return body

    @pypto.frontend.jit(runtime_options=RUNTIME, pass_options={**RUNTIME, "sg_set_scope": 1})
    def jitted(self, x: pypto.Tensor, y: pypto.Tensor):
        set_vec_tile_shapes(*[1, 4, 32])
        for i in pypto.loop(0, 4, 1, unroll_list=sorted([2, 1], reverse=True)):
            y[i] = x[i]
