//! The options shared by the rules that select among given priors over arms (paper
//! 003): those that eliminate the priors the observations contradict (PE-GP-UCB,
//! PE-GP-TS: `priors` and `delta`) and those that weigh them by their hyperposterior
//! (HP-GP-TS, MAP-GP-TS: `priors` and `hyperprior`). Each rule's module makes its options
//! type with [`selection_rule!`], so that the fields and their checks are written once.

use super::check_delta;
use crate::domain::InvalidInput;

/// δ of the prior-elimination algorithms (003 §5).
pub(crate) fn default_elimination_delta() -> f64 {
    0.05
}

/// An eliminating rule's check of its `delta`.
pub(crate) fn check_delta_of(delta: &f64) -> Result<(), InvalidInput> {
    check_delta(*delta)
}

/// A weighing rule's check of its `hyperprior`: none here, it is checked with the priors
/// (their number fixes its length).
pub(crate) fn checked_with_the_priors<T>(_hyperprior: &T) -> Result<(), InvalidInput> {
    Ok(())
}

/// An eliminating rule has no hyperprior for the priors' check.
pub(crate) fn no_hyperprior<T>(_delta: &mut T) -> Option<&mut Option<Vec<f64>>> {
    None
}

/// A selection rule's options type, `$options`, named `$name`, with its summary:
/// `eliminating` ones take `priors` and `delta` (default 0.05), `weighing` ones `priors`
/// and `hyperprior` (uniform when absent).
macro_rules! selection_rule {
    (eliminating $(#[$doc:meta])* $options:ident, $name:literal, $summary:literal) => {
        $crate::domain::algorithm::selection::selection_rule! {
            @make $(#[$doc])* $options, $name, $summary, eliminates: true,
            extra: {
                /// The elimination's confidence δ (default 0.05).
                #[serde(default = "crate::domain::algorithm::default_elimination_delta")]
                #[cfg_attr(
                    feature = "openapi",
                    schema(default = $crate::domain::algorithm::default_elimination_delta)
                )]
                pub delta: f64,
            },
            field: delta,
            check: $crate::domain::algorithm::selection::check_delta_of,
            hyperprior: $crate::domain::algorithm::selection::no_hyperprior
        }
    };
    (weighing $(#[$doc:meta])* $options:ident, $name:literal, $summary:literal) => {
        $crate::domain::algorithm::selection::selection_rule! {
            @make $(#[$doc])* $options, $name, $summary, eliminates: false,
            extra: {
                /// Prior weights (normalised; uniform when absent).
                #[serde(default)]
                pub hyperprior: Option<Vec<f64>>,
            },
            field: hyperprior,
            check: $crate::domain::algorithm::selection::checked_with_the_priors,
            hyperprior: Some
        }
    };
    (
        @make $(#[$doc:meta])* $options:ident, $name:literal, $summary:literal,
        eliminates: $eliminates:literal,
        extra: { $($extra:tt)* },
        field: $field:ident,
        check: $check:path,
        hyperprior: $hyperprior:path
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(deny_unknown_fields)]
        pub struct $options {
            /// The priors over the arms it selects among.
            pub priors: Vec<$crate::domain::priors::PriorSpec>,
            $($extra)*
        }

        impl $crate::domain::algorithm::Algorithm for $options {
            const NAME: &'static str = $name;
            const FACTS: $crate::domain::algorithm::Facts =
                $crate::domain::algorithm::Facts::selection($summary, $eliminates);

            fn check(&self) -> Result<(), $crate::domain::InvalidInput> {
                $check(&self.$field)
            }

            fn priors(&self) -> Option<&[$crate::domain::priors::PriorSpec]> {
                Some(&self.priors)
            }

            fn check_priors(
                &mut self,
                arms: Option<&[$crate::domain::space::Arm]>,
            ) -> Result<(), $crate::domain::InvalidInput> {
                $crate::domain::priors::validate_priors(
                    $name,
                    &mut self.priors,
                    $hyperprior(&mut self.$field),
                    arms,
                    $crate::domain::priors::MAX_PRIORS,
                )
            }
        }
    };
}
pub(crate) use selection_rule;
