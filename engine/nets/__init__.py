"""Networks: our format and torch model, Leela Zero's and KataGo's, Winograd, precision (inference and training), evaluators (their cache, CUDA graphs), loading a net.
May import engine.core, engine.native, engine.errors, engine.fileio, engine.play.player (gpu_settings) and engine.options (loading)."""
