"""Networks: ours, Leela Zero's and KataGo's weights, the evaluator, precision, Winograd, CUDA."""
