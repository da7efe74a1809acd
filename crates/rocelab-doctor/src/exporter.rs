//! Prometheus exporter.
