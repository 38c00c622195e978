"""The project folder: its root (evalduck.toml or [tool.evalduck]), its file's settings, what `evalduck init`
writes and a deployment's schedules. Standard library and pydantic only; nothing here imports Prefect at import."""
