"""The labelling app: items, the stream engine, the label pipeline, ingestion and export."""
