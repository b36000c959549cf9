"""Stand-in for ``mlx.core``: the dtypes the loader names."""

float16 = "float16"
float32 = "float32"
bfloat16 = "bfloat16"
