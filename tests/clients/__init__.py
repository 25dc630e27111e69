"""GUI and client programs driving the engine: Lizzie, Quarry, GoGui, KaTrain, Sabaki."""
