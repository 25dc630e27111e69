"""How the net learns: the training step (SGD, losses, the optimiser's checkpoints) and its data-parallel ranks.
May import engine/, train.config, train.replay, train.rundir and train.stage; the trainer stage (train.trainer) drives it."""
