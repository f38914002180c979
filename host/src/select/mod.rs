//! Tier 5, choice by measurement (with [`crate::tune`]): a matrix's storage format, for a known
//! number of products ([`Gpu::upload_for_products`](crate::Gpu::upload_for_products)), and BRC's
//! block width ([`Gpu::upload_brc_tuned`](crate::Gpu::upload_brc_tuned), `brc_b2.rs`).
//!
//! A format beyond CSR must first be converted, which on the H100 bench took 15 to 650 ms for 20
//! million entries, while the best CSR kernel was rarely beaten, and by formats whose speed the row
//! statistics did not predict. So the planner measures: the CSR product, then each cheap candidate's
//! conversion and product, and keeps the format with the smallest total over the products announced
//! (the break-even count of Reguly & Giles' comparison with ELLPACK, `break_even`).
//!
//! Candidates are COO (segmented), HYB, ELL, SELL and compressed column indices. BRC and dense
//! blocks are not tried: on the H100 bench they had the slowest conversions (50 to 925 ms), BRC with
//! its model's block width ran at a quarter to two thirds of its best speed on the irregular matrices
//! (finding a good width takes several conversions), and wherever either had a smaller total than
//! CSR, ELL or COO had a smaller one still.

mod auto_matrix;
mod brc_b2;
mod break_even;
mod planner;
mod selection;
mod timing;

pub use auto_matrix::AutoMatrix;
pub use brc_b2::BrcTuning;
pub use break_even::{FormatCost, break_even_products, cheapest_format, could_pay_off};
pub use planner::MIN_PLANNED_PRODUCTS;
pub use selection::{AutoFormat, Outcome, Reason, Selection, Trial};
pub use timing::{PLAN_TIMED_PRODUCTS, PLAN_WARMUP_PRODUCTS};
