"""Test helpers: fake OpenAI-compatible and Ollama servers, and their pytest fixtures."""
