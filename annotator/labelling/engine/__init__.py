"""The engine: the label pipeline, stream decisions, learner state, the label budget, running
totals, stored vectors, bulk writes and background jobs."""
