//! The element types the bench measures, as it names them in options, tables and JSON (`f32`,
//! `f64`).

use gpu_spmv::Scalar;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An element type of a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    F32,
    F64,
}

impl Precision {
    /// Both, in the order a run measures them.
    pub const ALL: [Precision; 2] = [Precision::F32, Precision::F64];

    /// The library's name of the type (`Scalar::NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => f32::NAME,
            Precision::F64 => f64::NAME,
        }
    }

    /// The precision of `T`.
    pub fn of<T: Scalar>() -> Self {
        match T::PRECISION {
            gpu_spmv::Precision::Single => Precision::F32,
            gpu_spmv::Precision::Double => Precision::F64,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so that table columns (`{:<4}`) line up.
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_json_as_the_library_names_them() {
        for p in Precision::ALL {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<Precision>(&json).unwrap(), p);
        }
        assert_eq!((Precision::of::<f32>(), Precision::of::<f64>()), (Precision::F32, Precision::F64));
    }
}
