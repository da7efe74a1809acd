//! Human and JSON renderings of a diagnosis.
