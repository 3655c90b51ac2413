"""Two matmul kernels, written for the priors scanner tests (never run)."""

import pypto
from pypto import frontend, set_cube_tile_shapes, set_pass_options


@frontend.jit(runtime_options={"stitch_function_max_num": 256})
def matmul_big(a: pypto.Tensor, b: pypto.Tensor, c: pypto.Tensor):
    set_cube_tile_shapes([128, 128], [64, 256], [256, 256], enable_split_k=False)
    set_pass_options(cube_l1_reuse_setting={-1: 4}, cube_nbuffer_setting={-1: 2})
    c[:, :] = pypto.matmul(a, b)


def make_matmul(m: int, k: int, n: int):
    """A matmul whose tiles follow the problem: nothing here is a literal config."""

    @frontend.jit(runtime_options=dict(stitch_function_max_num=m))
    def matmul_any(a: pypto.Tensor, b: pypto.Tensor, c: pypto.Tensor):
        set_cube_tile_shapes([m, m], [k, k], [n, n])
        set_pass_options(sg_set_scope=k // 64)
        c[:, :] = pypto.matmul(a, b)

    return matmul_any
