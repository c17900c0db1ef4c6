"""The warm search server hooks talk to (keeps the model and a connection loaded between prompts)."""
