//! What the planner measured and why it chose a format: [`Selection`], printable as a table.

use super::break_even::FormatCost;
use std::fmt;

/// A format the planner can choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AutoFormat {
    /// CSR with [`crate::Kernel::Auto`]: the baseline, needing no conversion.
    Csr,
    /// COO with [`crate::CooKernel::Segmented`].
    CooSegmented,
    /// HYB with the ELL width of [`crate::formats::hyb_ell_width`].
    Hyb,
    /// ELL, tried only when [`crate::formats::ELL_MAX_PADDING_RATIO`] allows it.
    Ell,
    /// SELL-32, tried only when its padding limit allows it (see [`crate::formats::Sell`]).
    Sell,
    /// Compressed column indices, values in the matrix's type ([`crate::CompressedKernel::Auto`]):
    /// the same `y`, bit for bit, as the cooperative CSR kernel of the same width.
    Compressed,
    /// ELL with 16-bit column offsets from the row, values in the matrix's type: ELL's `y`, bit for
    /// bit; tried only where ELL's padding limit allows it and every column lies within `i16::MAX`
    /// of its row.
    CompressedEll,
    /// DIA, values in the matrix's type: ELL's `y`, bit for bit, for rows sorted by column; tried
    /// only for entries on at most [`crate::formats::DIA_MAX_DIAGONALS`] diagonals.
    Dia,
}

impl AutoFormat {
    /// The format's key, as the bench's reports name it.
    pub fn key(self) -> &'static str {
        match self {
            AutoFormat::Csr => "csr-auto",
            AutoFormat::CooSegmented => "coo-segmented",
            AutoFormat::Hyb => "hyb",
            AutoFormat::Ell => "ell",
            AutoFormat::Sell => "sell",
            AutoFormat::Compressed => "compressed",
            AutoFormat::CompressedEll => "compressed-ell",
            AutoFormat::Dia => "dia",
        }
    }
}

/// What became of a candidate format.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// Converted, uploaded and timed; `break_even` is [`super::break_even_products`] against CSR
    /// (`None`: never, the format is not faster).
    Measured { cost: FormatCost, break_even: Option<u64> },
    /// Converted on the host in `conversion_ms`, which alone is longer than CSR's products: neither
    /// uploaded nor timed (see [`super::could_pay_off`]).
    ConversionTooSlow { conversion_ms: f64 },
    /// Not tried: for this matrix its product is that of `same_as` (HYB whose ELL part would be empty
    /// is COO; HYB whose COO part would be empty is ELL).
    Redundant { same_as: AutoFormat },
    /// Refused by its conversion or upload: a layout's limit (ELL's, SELL's and compressed ELL's padding,
    /// compressed ELL's columns near their row, DIA's diagonals), or device memory.
    Refused(String),
}

/// One candidate and its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub format: AutoFormat,
    pub outcome: Outcome,
}

/// Why the planner chose what it chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// The matrix has no rows or no entries: every format's product is the same scaling of `y`.
    NoEntries,
    /// Fewer products than [`super::MIN_PLANNED_PRODUCTS`]: CSR, nothing measured or converted.
    FewProducts,
    /// Measured: the chosen format has the smallest total time, conversion included, over the
    /// products (CSR when no candidate is below it).
    SmallestTotal,
}

/// The planner's record for one matrix: the CSR product time, every candidate's outcome, the choice
/// and its reason. `Display` prints it as a table.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Selection {
    /// The products the caller said it would run.
    pub products: u64,
    /// Time of one CSR product with [`crate::Kernel::Auto`], in milliseconds; `None` when the planner
    /// measured nothing.
    pub csr_product_ms: Option<f64>,
    /// The candidates, in the order they were tried.
    pub trials: Vec<Trial>,
    pub chosen: AutoFormat,
    pub reason: Reason,
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.reason {
            Reason::NoEntries => "the matrix has no entries",
            Reason::FewProducts => "too few products to plan",
            Reason::SmallestTotal => "smallest total time, conversion included",
        };
        writeln!(f, "{} products: {} ({why})", self.products, self.chosen.key())?;
        let Some(csr_ms) = self.csr_product_ms else { return Ok(()) };
        writeln!(f, "{:<14} {:>12} {:>14} {:>12}", "format", "product us", "conversion ms", "break-even")?;
        writeln!(f, "{:<14} {:>12.2} {:>14} {:>12}", AutoFormat::Csr.key(), csr_ms * 1e3, "-", "-")?;
        for trial in &self.trials {
            let key = trial.format.key();
            match &trial.outcome {
                Outcome::Measured { cost, break_even } => {
                    let break_even = break_even.map_or("never".to_string(), |n| n.to_string());
                    let (us, ms) = (cost.product_ms * 1e3, cost.conversion_ms);
                    writeln!(f, "{key:<14} {us:>12.2} {ms:>14.2} {break_even:>12}")?;
                }
                Outcome::ConversionTooSlow { conversion_ms } => {
                    let note = "not timed: the conversion alone exceeds CSR's products";
                    writeln!(f, "{key:<14} {:>12} {conversion_ms:>14.2} {:>12}  {note}", "-", "-")?;
                }
                Outcome::Redundant { same_as } => {
                    writeln!(f, "{key:<14} not tried: the same product as {}", same_as.key())?;
                }
                Outcome::Refused(why) => writeln!(f, "{key:<14} refused: {why}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_every_outcome() {
        let selection = Selection {
            products: 1_000_000,
            csr_product_ms: Some(0.271),
            trials: vec![
                Trial {
                    format: AutoFormat::CooSegmented,
                    outcome: Outcome::Measured {
                        cost: FormatCost { conversion_ms: 26.8, product_ms: 0.3 },
                        break_even: None,
                    },
                },
                Trial {
                    format: AutoFormat::Hyb,
                    outcome: Outcome::Measured {
                        cost: FormatCost { conversion_ms: 168.2, product_ms: 0.226 },
                        break_even: Some(3738),
                    },
                },
                Trial { format: AutoFormat::Ell, outcome: Outcome::Refused("padding".into()) },
                Trial {
                    format: AutoFormat::Ell,
                    outcome: Outcome::ConversionTooSlow { conversion_ms: 95.1 },
                },
                Trial { format: AutoFormat::Hyb, outcome: Outcome::Redundant { same_as: AutoFormat::Ell } },
            ],
            chosen: AutoFormat::Hyb,
            reason: Reason::SmallestTotal,
        };
        let text = selection.to_string();
        assert!(text.starts_with("1000000 products: hyb (smallest total time"), "{text}");
        for part in [
            "csr-auto",
            "271.00",
            "coo-segmented",
            "never",
            "226.00",
            "168.20",
            "3738",
            "refused: padding",
            "95.10",
            "the same product as ell",
        ] {
            assert!(text.contains(part), "{part} missing from\n{text}");
        }
        let unmeasured = Selection {
            csr_product_ms: None,
            trials: vec![],
            chosen: AutoFormat::Csr,
            reason: Reason::FewProducts,
            ..selection
        };
        assert_eq!(unmeasured.to_string().lines().count(), 1);
    }
}
