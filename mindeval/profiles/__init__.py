"""Patient profiles: the attribute pool, the seeded sampler, backstories, stats and the official set."""
