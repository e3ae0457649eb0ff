"""Local OpenAI-compatible servers for tests: a scripted one (``scripted``) and llama.cpp (``llama``)."""
