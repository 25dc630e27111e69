"""tools.experiments: the training-design experiments, the seed experiment's registry, analysis and anchors."""
