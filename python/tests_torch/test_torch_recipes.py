"""docs/python.md's PyTorch recipes, run against real torch (registered with tests_torch, where
`import torch` works): a recipe followed literally must give "consistent" on torch's own kernel."""
import torch

import numfid


def test_layer_norm_recipe_bf16_and_fp32():
    """PyTorch CPU's layer_norm: bf16 under --compute bf16 with rowwise-moments(16), fp32 under
    --compute fp32 with rowwise-moments(8), both norm_form="shifted" (docs/python.md, verdict.md
    §8.3). The bf16 claim once lacked --compute bf16 in python.md: under --compute fp32 torch's
    own bf16 layer_norm is a proven defect."""
    torch.manual_seed(0)
    xb = torch.randn(64, 512).bfloat16()
    cb = torch.nn.functional.layer_norm(xb, (512,))
    r = numfid.check("layernorm", "--in bf16 --out bf16 --compute bf16", x=xb, c=cb,
                     variance="rowwise-moments(16)", norm_form="shifted")
    assert r.verdict == "consistent", r.report
    x = torch.randn(64, 512)
    r = numfid.check("layernorm", "--in fp32 --out fp32 --compute fp32", x=x,
                     c=torch.nn.functional.layer_norm(x, (512,)), variance="rowwise-moments(8)",
                     norm_form="shifted")
    assert r.verdict == "consistent", r.report
    # The bf16 output is not what an fp32-compute kernel gives: the --compute matters.
    r = numfid.check("layernorm", "--in bf16 --out bf16 --compute fp32", x=xb, c=cb,
                     variance="rowwise-moments(16)", norm_form="shifted")
    assert r.verdict == "defect"
