//! A session's algorithm (`{"name": ..., options...}`): one module per algorithm, each
//! holding its options with their paper defaults, their check and the algorithm's
//! [`Facts`] (its behaviour is in the policy module of the same name), and the registry
//! (`for_each_algorithm!`) from which [`AlgorithmConfig`], [`AlgorithmName`] and
//! [`AlgorithmName::ALL`] are made.
//!
//! Adding an algorithm: its options here (`domain/algorithm/<name>.rs`, implementing
//! [`Algorithm`]), its policy (`policy/<name>.rs`, implementing the policy layer's
//! `BuildPolicy`), each declared (`pub mod <name>;`), and one line in
//! `for_each_algorithm!`.

mod beta;
mod selection;

pub mod bolt;
pub mod et_gp_ucb;
pub mod gp_ucb;
pub mod hp_gp_ts;
pub mod map_gp_ts;
pub mod pe_gp_ts;
pub mod pe_gp_ucb;
pub mod r_gp_ucb;
pub mod random;
pub mod tv_gp_ucb;
pub mod w_dbo;

use serde::{Deserialize, Serialize};

pub(crate) use beta::check_beta;
pub use beta::{Beta, BetaSchedule};
pub(crate) use selection::default_elimination_delta;

use crate::domain::InvalidInput;
use crate::domain::kernel::KernelKind;
use crate::domain::priors::{PriorSpec, validate_priors};
use crate::domain::space::Arm;

/// The registry: every algorithm, as `Variant: module::Options`, in the order the API
/// lists them (002's Table 3 order, the floor, then 003's prior-selection rules). It
/// calls `$callback!` with the list: here to make [`AlgorithmConfig`] and
/// [`AlgorithmName`], in the policy layer to dispatch to each one's policy. The modules
/// are declared by name, here and in `policy`, where `cargo fmt` sees them (it does not
/// follow a macro's). The variant's kebab-case name is the API name, which must equal
/// the options' [`Algorithm::NAME`] (a test checks it).
macro_rules! for_each_algorithm {
    ($callback:ident) => {
        $callback! {
            GpUcb: gp_ucb::GpUcb,
            EtGpUcb: et_gp_ucb::EtGpUcb,
            RGpUcb: r_gp_ucb::RGpUcb,
            TvGpUcb: tv_gp_ucb::TvGpUcb,
            WDbo: w_dbo::WDbo,
            Bolt: bolt::Bolt,
            Random: random::Random,
            PeGpUcb: pe_gp_ucb::PeGpUcb,
            PeGpTs: pe_gp_ts::PeGpTs,
            HpGpTs: hp_gp_ts::HpGpTs,
            MapGpTs: map_gp_ts::MapGpTs,
        }
    };
}
pub(crate) use for_each_algorithm;

/// An algorithm's options, as a create request's `algorithm` object holds them (less
/// `name`): its name, its facts and its check.
pub trait Algorithm {
    /// The API name (`algorithm.name`).
    const NAME: &'static str;
    /// What the algorithm is and does.
    const FACTS: Facts;

    /// Checks the options; an error names its field (`algorithm.…`).
    fn check(&self) -> Result<(), InvalidInput>;

    /// The priors over arms the options give, if any.
    fn priors(&self) -> Option<&[PriorSpec]> {
        None
    }

    /// Checks the priors against the session's arms and fills in their defaults (and a
    /// hyperprior's).
    fn check_priors(&mut self, _arms: Option<&[Arm]>) -> Result<(), InvalidInput> {
        Ok(())
    }
}

/// What an algorithm is, as the service, the engine's reports, `GET /v1/algorithms` and
/// the bench ask of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// What it does, in a line (its paper and its rule).
    pub summary: &'static str,
    /// Whether it ever removes observations from its dataset.
    pub forgets: bool,
    /// Whether its model has a temporal kernel (else k_T ≡ 1).
    pub uses_time: bool,
    /// Whether it takes priors over arms (`algorithm.priors`).
    pub priors: PriorUse,
    /// Whether it bounds its own dataset (BOLT's n*, at most `max_dataset_size`), so
    /// that the server's cap on a session's active observations does not apply to it.
    pub bounds_its_dataset: bool,
    /// Whether it keeps a removal budget that a step reports (W-DBO).
    pub reports_budget: bool,
    /// Whether it eliminates priors (a step reports the active ones) rather than
    /// weighing them (a step reports their probabilities).
    pub eliminates_priors: bool,
    /// Whether it fits a model (all but random search), which bounds the suggestions
    /// of one call.
    pub fits_a_model: bool,
    /// Whether its temporal kernel is (1−ε)^{|Δt|/2} (TV-GP-UCB): Matérn-1/2 in time,
    /// reported as ε beside l_T.
    pub epsilon_in_time: bool,
}

impl Facts {
    /// A static model that fits a GP, takes no priors and forgets nothing; an
    /// algorithm's facts state what differs (`..Facts::STATIC`).
    pub const STATIC: Facts = Facts {
        summary: "",
        forgets: false,
        uses_time: false,
        priors: PriorUse::None,
        bounds_its_dataset: false,
        reports_budget: false,
        eliminates_priors: false,
        fits_a_model: true,
        epsilon_in_time: false,
    };

    /// A rule that selects among given priors over arms (paper 003), which it requires:
    /// `eliminates`, or weighs them by their hyperposterior.
    pub const fn selection(summary: &'static str, eliminates: bool) -> Facts {
        Facts {
            summary,
            priors: PriorUse::Required,
            eliminates_priors: eliminates,
            ..Facts::STATIC
        }
    }
}

/// Whether an algorithm takes priors over arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum PriorUse {
    /// It models the objective itself, without priors.
    None,
    /// One prior may replace its fitted kernel on an arm set.
    Optional,
    /// It selects among the given priors, and needs them.
    Required,
}

/// Makes [`AlgorithmConfig`] and [`AlgorithmName`] from the registry.
macro_rules! algorithms {
    ($($variant:ident: $module:ident::$options:ident,)*) => {
        /// The algorithm of a session and its options (`{"name": ..., options...}`): one
        /// variant per algorithm, holding its options.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "name", rename_all = "kebab-case")]
        pub enum AlgorithmConfig {
            $($variant($module::$options),)*
        }

        /// Which algorithm a configuration is, by its API name (`bolt`, `w-dbo`, …): what
        /// a session listing filters by.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "kebab-case")]
        pub enum AlgorithmName {
            $($variant,)*
        }

        impl AlgorithmName {
            /// Every algorithm, in the order the API lists them (`GET /v1/algorithms`).
            /// The service's names, the dashboard's filter and the bench's list all come
            /// from here.
            pub const ALL: [AlgorithmName; [$(AlgorithmName::$variant,)*].len()] =
                [$(AlgorithmName::$variant,)*];

            /// The name used in the API (as serialised).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(AlgorithmName::$variant => <$module::$options as Algorithm>::NAME,)*
                }
            }

            /// What the algorithm is and does.
            pub fn facts(self) -> &'static Facts {
                match self {
                    $(AlgorithmName::$variant => &<$module::$options as Algorithm>::FACTS,)*
                }
            }
        }

        impl AlgorithmConfig {
            /// Which algorithm this is.
            pub fn kind(&self) -> AlgorithmName {
                match self {
                    $(AlgorithmConfig::$variant(_) => AlgorithmName::$variant,)*
                }
            }

            /// The priors of an algorithm that models the objective with given priors
            /// over arms.
            pub fn priors(&self) -> Option<&[PriorSpec]> {
                match self {
                    $(AlgorithmConfig::$variant(options) => options.priors(),)*
                }
            }

            /// Checks the options ([`Algorithm::check`]).
            pub(crate) fn check(&self) -> Result<(), InvalidInput> {
                match self {
                    $(AlgorithmConfig::$variant(options) => options.check(),)*
                }
            }

            /// Checks the priors against the arms and fills in their defaults and the
            /// hyperprior ([`Algorithm::check_priors`]).
            pub(crate) fn check_priors(
                &mut self,
                arms: Option<&[Arm]>,
            ) -> Result<(), InvalidInput> {
                match self {
                    $(AlgorithmConfig::$variant(options) => options.check_priors(arms),)*
                }
            }
        }

        $(impl From<$module::$options> for AlgorithmConfig {
            fn from(options: $module::$options) -> AlgorithmConfig {
                AlgorithmConfig::$variant(options)
            }
        })*

        /// The schema of each variant is its options' object with `name` added, so the
        /// API's document shows one object per algorithm.
        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for AlgorithmConfig {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::OneOfBuilder::new()
                    $(.item(tagged_schema::<$module::$options>()))*
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for AlgorithmConfig {
            fn schemas(
                schemas: &mut Vec<(
                    String,
                    utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
                )>,
            ) {
                $(<$module::$options as utoipa::ToSchema>::schemas(schemas);)*
            }
        }
    };
}
for_each_algorithm!(algorithms);

impl Default for AlgorithmConfig {
    /// BOLT with its defaults.
    fn default() -> Self {
        AlgorithmConfig::Bolt(bolt::Bolt::default())
    }
}

impl AlgorithmName {
    /// What the algorithm does, in a line (its paper and its rule).
    pub fn summary(self) -> &'static str {
        self.facts().summary
    }

    /// Whether the algorithm ever removes observations from its dataset (BOLT, W-DBO and
    /// the resetting R-GP-UCB and ET-GP-UCB); the others keep every one.
    pub fn forgets(self) -> bool {
        self.facts().forgets
    }

    /// Whether the algorithm bounds its own dataset ([`Facts::bounds_its_dataset`]).
    /// Every other algorithm's observe is refused past the server's cap, and the suggest
    /// of one that never [forgets](Self::forgets) too (its observation could not be
    /// taken); one that forgets may still shrink at its observe.
    pub fn bounds_its_dataset(self) -> bool {
        self.facts().bounds_its_dataset
    }

    /// Whether the model has a temporal kernel (spatio-temporal algorithms) or k_T ≡ 1.
    pub fn uses_time(self) -> bool {
        self.facts().uses_time
    }

    /// Whether the algorithm takes priors over arms (`algorithm.priors`).
    pub fn priors(self) -> PriorUse {
        self.facts().priors
    }
}

/// One algorithm as `GET /v1/algorithms` lists it: its name and what it does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlgorithmInfo {
    /// The API name (`algorithm.name` of a create request).
    pub name: AlgorithmName,
    /// What it does, in a line.
    pub summary: String,
    /// Whether it ever removes observations from its dataset.
    pub forgets: bool,
    /// Whether its model has time (a temporal kernel).
    pub temporal: bool,
    /// Whether it takes priors over arms.
    pub priors: PriorUse,
}

impl From<AlgorithmName> for AlgorithmInfo {
    fn from(name: AlgorithmName) -> AlgorithmInfo {
        AlgorithmInfo {
            name,
            summary: name.summary().to_string(),
            forgets: name.forgets(),
            temporal: name.uses_time(),
            priors: name.priors(),
        }
    }
}

impl AlgorithmConfig {
    /// The name used in the API.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// What the algorithm is and does.
    pub fn facts(&self) -> &'static Facts {
        self.kind().facts()
    }

    /// Whether the algorithm ever removes observations from its dataset
    /// ([`AlgorithmName::forgets`]).
    pub fn forgets(&self) -> bool {
        self.facts().forgets
    }

    /// Whether the model has a temporal kernel ([`AlgorithmName::uses_time`]).
    pub fn uses_time(&self) -> bool {
        self.facts().uses_time
    }

    /// The temporal kernel an algorithm fixes, if it fixes one: (1−ε)^{|Δt|/2} =
    /// exp(−|Δt|/l_T) with l_T = −2/ln(1−ε) is Matérn-1/2 in time.
    pub(crate) fn required_temporal_kernel(&self) -> Option<KernelKind> {
        self.facts().epsilon_in_time.then_some(KernelKind::Matern12)
    }
}

/// The schema of one variant of [`AlgorithmConfig`]: `A`'s object (its doc comment its
/// description) with the tag `name` added, required.
#[cfg(feature = "openapi")]
fn tagged_schema<A: Algorithm + utoipa::ToSchema>() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
    let name = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some([A::NAME]));
    match A::schema() {
        RefOr::T(Schema::Object(mut object)) => {
            object.properties.insert("name".into(), name.into());
            object.required.push("name".into());
            Schema::Object(object)
        }
        // Every options type is a struct, whose schema is an object.
        other => Schema::AllOf(
            utoipa::openapi::schema::AllOfBuilder::new()
                .item(other)
                .item(ObjectBuilder::new().property("name", name).required("name"))
                .build(),
        ),
    }
}

/// Checks an elimination or trigger confidence δ (`algorithm.delta`).
pub(crate) fn check_delta(delta: f64) -> Result<(), InvalidInput> {
    if !(delta.is_finite() && delta > 0.0 && delta < 1.0) {
        return Err(InvalidInput::new(
            "algorithm.delta",
            "must lie strictly between 0 and 1",
        ));
    }
    Ok(())
}

/// Checks the one prior an algorithm may take in place of its fitted kernel (GP-UCB,
/// TV-GP-UCB) against the arms.
pub(crate) fn check_given_prior(
    name: &str,
    priors: &mut Option<Vec<PriorSpec>>,
    arms: Option<&[Arm]>,
) -> Result<(), InvalidInput> {
    match priors {
        Some(priors) => validate_priors(name, priors, None, arms, 1),
        None => Ok(()),
    }
}

/// Largest dataset a session may keep (BOLT's `max_dataset_size` bound).
pub const MAX_DATASET_SIZE: u64 = 20_000;

/// Checks the smallest dataset a forgetting rule keeps (`algorithm.min_dataset_size`).
pub(crate) fn check_dataset_floor(min_dataset_size: u64) -> Result<(), InvalidInput> {
    if !(1..=MAX_DATASET_SIZE).contains(&min_dataset_size) {
        return Err(InvalidInput::new(
            "algorithm.min_dataset_size",
            format!("must lie within [1, {MAX_DATASET_SIZE}]"),
        ));
    }
    Ok(())
}

/// The default smallest dataset of BOLT and W-DBO.
pub(crate) fn default_min_dataset_size() -> u64 {
    15
}

#[cfg(test)]
mod tests;
