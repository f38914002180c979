//! The GPU side: context and module ([`Gpu`]), and data uploaded to it.

mod context;
mod upload;

pub use context::Gpu;
pub use upload::{DeviceCsr, DeviceVector};
