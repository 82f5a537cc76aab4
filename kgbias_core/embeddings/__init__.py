"""Training, storing and rebuilding embeddings (the model store lives here)."""
