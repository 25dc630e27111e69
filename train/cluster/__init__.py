"""A training run on a Ray cluster (``train.loop --ray``): the driver, its options, the actors, gating on actors.
May import engine/ and the rest of train/; in train/ only train.loop imports it (Ray itself lazily)."""
