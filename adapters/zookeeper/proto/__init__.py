"""Protobuf classes generated from ``bookkeeper_data_formats.proto`` (see ``regenerate``)."""
