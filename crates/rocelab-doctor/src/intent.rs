//! Filling [`crate::drift::Intent`] from a fabric model (added once `rocelab-model` exposes
//! the resolved host QoS).
