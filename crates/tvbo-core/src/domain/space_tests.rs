//! Tests of the search space: the unit cube's maps, grids, choices and their errors.

use super::*;

/// The number a value holds (a test's parameters are numeric).
fn n(value: &ParamValue) -> f64 {
    value.as_number().expect("a number")
}

fn space() -> SearchSpace {
    SearchSpace::new(vec![
        ParameterSpec {
            name: "lr".into(),
            kind: ParameterType::Float,
            low: Some(1e-4),
            high: Some(1.0),
            choices: None,
            scale: Scale::Log,
            step: None,
            context: false,
        },
        ParameterSpec {
            name: "workers".into(),
            kind: ParameterType::Int,
            low: Some(1.0),
            high: Some(16.0),
            choices: None,
            scale: Scale::Linear,
            step: None,
            context: false,
        },
    ])
    .unwrap()
}

#[test]
fn round_trip_through_the_unit_cube() {
    let s = space();
    let params: Params = numbers([("lr", 0.01), ("workers", 4.0)]);
    let unit = s.to_unit(&params, "params").unwrap();
    assert!((unit[0] - 0.5).abs() < 1e-12);
    assert!((unit[1] - 0.2).abs() < 1e-12);
    let back = s.from_unit(&unit);
    assert!((back["lr"].as_number().unwrap() - 0.01).abs() < 1e-12);
    assert_eq!(back["workers"], ParamValue::Number(4.0));
}

#[test]
fn bad_params_name_the_field() {
    let s = space();
    let missing: Params = numbers([("lr", 0.01)]);
    assert_eq!(
        s.to_unit(&missing, "params").unwrap_err().field,
        "params.workers"
    );
    let extra: Params = numbers([("lr", 0.01), ("workers", 2.0), ("zzz", 1.0)]);
    assert_eq!(s.to_unit(&extra, "params").unwrap_err().field, "params.zzz");
    let outside: Params = numbers([("lr", 2.0), ("workers", 2.0)]);
    assert_eq!(
        s.to_unit(&outside, "params").unwrap_err().field,
        "params.lr"
    );
    let fractional: Params = numbers([("lr", 0.1), ("workers", 2.5)]);
    assert_eq!(
        s.to_unit(&fractional, "params").unwrap_err().field,
        "params.workers"
    );
}

#[test]
fn bounds_must_span_a_positive_finite_length_on_their_scale() {
    let parameter = |low: f64, high: f64, scale: Scale| ParameterSpec {
        name: "x".into(),
        kind: ParameterType::Float,
        low: Some(low),
        high: Some(high),
        scale,
        choices: None,
        step: None,
        context: false,
    };
    // Same logarithm in f64, though low < high.
    let err = SearchSpace::new(vec![parameter(1e10, 10000000000.000002, Scale::Log)]).unwrap_err();
    assert_eq!(err.field, "parameters[0].high");
    // Adjacent doubles are fine on a linear scale, and every value maps into [0, 1].
    let low = 1e10_f64;
    let high = f64::from_bits(low.to_bits() + 1);
    let s = SearchSpace::new(vec![parameter(low, high, Scale::Linear)]).unwrap();
    for v in [low, high] {
        let unit = s.to_unit(&numbers([("x", v)]), "params").unwrap();
        assert!((0.0..=1.0).contains(&unit[0]));
    }
    // A brute force over many tiny log ranges: accepted ranges map both bounds finitely.
    for k in 1..200u64 {
        let low = 1e10_f64;
        let high = f64::from_bits(low.to_bits() + k);
        if let Ok(s) = SearchSpace::new(vec![parameter(low, high, Scale::Log)]) {
            for v in [low, high] {
                let unit = s.to_unit(&numbers([("x", v)]), "params").unwrap();
                assert!(unit[0].is_finite() && (0.0..=1.0).contains(&unit[0]));
            }
            assert!(n(&s.from_unit(&[0.5])["x"]).is_finite());
        }
    }
}

/// Choice k of K sits at the centre of its cell, (k + ½)/K; every point of a cell
/// reads as its choice, so uniform points give uniform choices; `snap` moves a point
/// to its cell's centre; a number, an unknown choice or bounds are refused.
#[test]
fn categorical_choices_map_to_the_centres_of_their_cells() {
    let codec = ParameterSpec::categorical("codec", &["lz4", "zstd", "none"]);
    let s = SearchSpace::new(vec![codec.clone(), ParameterSpec::float("x", 0.0, 1.0)]).unwrap();
    for (k, choice) in ["lz4", "zstd", "none"].into_iter().enumerate() {
        let params: Params = [
            ("codec".to_string(), choice.into()),
            ("x".to_string(), 0.5.into()),
        ]
        .into();
        let unit = s.to_unit(&params, "params").unwrap();
        assert_eq!(unit[0], (k as f64 + 0.5) / 3.0);
        assert_eq!(s.from_unit(&unit), params);
    }
    let mut counts = [0; 3];
    for i in 0..3000 {
        let u = (i as f64 + 0.5) / 3000.0;
        let choice = s.from_unit(&[u, 0.5])["codec"].clone();
        let k = ["lz4", "zstd", "none"]
            .iter()
            .position(|c| ParamValue::from(*c) == choice)
            .unwrap();
        counts[k] += 1;
        assert_eq!(s.snap(&[u, 0.5])[0], (k as f64 + 0.5) / 3.0);
    }
    assert_eq!(counts, [1000, 1000, 1000]);
    assert_eq!(s.from_unit(&[1.0, 0.5])["codec"], ParamValue::from("none"));
    for (value, message) in [
        (ParamValue::Number(1.0), "as a string"),
        (ParamValue::from("gzip"), "is not one of"),
    ] {
        let params: Params = [("codec".to_string(), value), ("x".to_string(), 0.5.into())].into();
        let err = s.to_unit(&params, "params").unwrap_err();
        assert_eq!(err.field, "params.codec");
        assert!(err.message.contains(message), "{}", err.message);
    }
    let numeric_as_choice: Params = [
        ("codec".to_string(), "lz4".into()),
        ("x".to_string(), "a".into()),
    ]
    .into();
    assert_eq!(
        s.to_unit(&numeric_as_choice, "params").unwrap_err().field,
        "params.x"
    );
    for (bad, field) in [
        (
            ParameterSpec {
                low: Some(0.0),
                ..codec.clone()
            },
            "parameters[0].low",
        ),
        (
            ParameterSpec {
                choices: None,
                ..codec.clone()
            },
            "parameters[0].choices",
        ),
        (
            ParameterSpec {
                choices: Some(vec!["a".into()]),
                ..codec.clone()
            },
            "parameters[0].choices",
        ),
        (
            ParameterSpec {
                choices: Some(vec!["a".into(), "a".into()]),
                ..codec.clone()
            },
            "parameters[0].choices[1]",
        ),
        (
            ParameterSpec {
                choices: Some(vec!["a".into(), String::new()]),
                ..codec.clone()
            },
            "parameters[0].choices[1]",
        ),
        (
            ParameterSpec {
                choices: Some(vec!["a".into(), "b".into()]),
                ..ParameterSpec::float("x", 0.0, 1.0)
            },
            "parameters[0].choices",
        ),
        (
            ParameterSpec {
                high: None,
                ..ParameterSpec::float("x", 0.0, 1.0)
            },
            "parameters[0].high",
        ),
    ] {
        assert_eq!(SearchSpace::new(vec![bad]).unwrap_err().field, field);
    }
}

#[test]
fn from_unit_stays_in_bounds() {
    let s = space();
    for u in [-1.0, 0.0, 0.3, 1.0, 2.0, f64::NAN] {
        let p = s.from_unit(&[u, u]);
        assert!(n(&p["lr"]) >= 1e-4 && n(&p["lr"]) <= 1.0);
        assert!(n(&p["workers"]) >= 1.0 && n(&p["workers"]) <= 16.0);
    }
}

fn stepped(kind: ParameterType, low: f64, high: f64, step: f64) -> ParameterSpec {
    ParameterSpec {
        name: "x".into(),
        kind,
        low: Some(low),
        high: Some(high),
        scale: Scale::Linear,
        choices: None,
        step: Some(step),
        context: false,
    }
}

/// A stepped parameter's suggestions are the grid point nearest the continuous
/// proposal, checked against a search over every grid point; they read back through
/// `to_unit`, and `snap` leaves them where they are.
#[test]
fn steps_put_values_on_the_nearest_grid_point() {
    for (kind, low, high, step) in [
        (ParameterType::Float, 0.0, 1.0, 0.1),
        (ParameterType::Float, -2.5, 7.0, 0.75),
        (ParameterType::Int, 0.0, 10.0, 4.0),
        (ParameterType::Int, -7.0, 20.0, 3.0),
    ] {
        let space = SearchSpace::new(vec![stepped(kind, low, high, step)]).unwrap();
        let grid: Vec<f64> = (0..)
            .map(|k| low + k as f64 * step)
            .take_while(|&g| g <= high + 1e-12)
            .collect();
        for i in 0..=200 {
            let u = i as f64 / 200.0;
            let raw = low + u * (high - low);
            let value = n(&space.from_unit(&[u])["x"]);
            let nearest = grid
                .iter()
                .copied()
                .min_by(|a, b| (a - raw).abs().total_cmp(&(b - raw).abs()))
                .unwrap();
            let tie = grid
                .iter()
                .any(|&g| g != nearest && ((g - raw).abs() - (nearest - raw).abs()).abs() < 1e-9);
            if !tie {
                assert!(
                    (value - nearest).abs() < 1e-9,
                    "{low}..{high} by {step}: {raw} -> {value}, not {nearest}"
                );
            }
            assert!(value <= high && value >= low);
            let unit = space.to_unit(&space.from_unit(&[u]), "params").unwrap();
            assert_eq!(space.snap(&unit), unit);
            if kind == ParameterType::Int {
                assert_eq!(value.fract(), 0.0);
            }
        }
    }
}

/// A value off the grid is a field error; a grid point computed in f64 or written as a
/// decimal reads back.
#[test]
fn values_off_the_grid_are_refused() {
    let space = SearchSpace::new(vec![stepped(ParameterType::Int, 0.0, 10.0, 4.0)]).unwrap();
    let at = |x: f64| -> Params { numbers([("x", x)]) };
    assert!(space.to_unit(&at(8.0), "params").is_ok());
    let err = space.to_unit(&at(6.0), "params").unwrap_err();
    assert_eq!(err.field, "params.x");
    let space = SearchSpace::new(vec![stepped(ParameterType::Float, 0.0, 1.0, 0.1)]).unwrap();
    assert!(space.to_unit(&at(0.3), "params").is_ok());
    assert!(space.to_unit(&at(0.1 * 3.0), "params").is_ok());
    assert_eq!(
        space.to_unit(&at(0.35), "params").unwrap_err().field,
        "params.x"
    );
}

/// Steps that are not positive, leave a single grid point, sit on a log scale or are
/// fractional for an integer are refused, naming the field.
#[test]
fn bad_steps_name_the_field() {
    let bad = [
        stepped(ParameterType::Float, 0.0, 1.0, 0.0),
        stepped(ParameterType::Float, 0.0, 1.0, -0.1),
        stepped(ParameterType::Float, 0.0, 1.0, f64::NAN),
        stepped(ParameterType::Float, 0.0, 1.0, 1.5),
        stepped(ParameterType::Int, 0.0, 10.0, 2.5),
        ParameterSpec {
            scale: Scale::Log,
            ..stepped(ParameterType::Float, 1.0, 10.0, 1.0)
        },
    ];
    for p in bad {
        let err = SearchSpace::new(vec![p.clone()]).unwrap_err();
        assert_eq!(err.field, "parameters[0].step", "{p:?}");
    }
}

/// Integral values are written as JSON integers, others as they are, choices as
/// strings; all read back as they were.
#[test]
fn integral_values_are_written_as_integers() {
    let params: Params = [
        ("a".to_string(), 4.0.into()),
        ("b".to_string(), (-0.0).into()),
        ("c".to_string(), 0.25.into()),
        ("d".to_string(), 1e300.into()),
        ("e".to_string(), (-9_007_199_254_740_991.0).into()),
        ("f".to_string(), "zstd".into()),
    ]
    .into();
    let json = serde_json::to_value(&params).unwrap();
    assert!(json["a"].is_i64() && json["a"] == 4);
    assert!(json["b"].is_i64() && json["b"] == 0);
    assert!(json["c"].is_f64());
    assert!(json["d"].is_f64());
    assert!(json["e"].is_i64());
    assert_eq!(json["f"], "zstd");
    let back: Params = serde_json::from_value(json).unwrap();
    assert_eq!(back, params);
}

/// Grids whose points low + k·step are not distinct in f64 are refused at `step`, naming
/// the least step: the fuzzed cases whose suggests answered 500.
#[test]
fn steps_below_the_bounds_precision_are_refused() {
    for (low, high, step) in [
        (1e15, 1e15 + 10.0, 0.1),
        (-1e10, 1e10, 1e-6),
        (0.0, 1.0, 5e-324),
        (-1.0, 1.0, 1e-14),
    ] {
        let err =
            SearchSpace::new(vec![stepped(ParameterType::Float, low, high, step)]).unwrap_err();
        assert_eq!(err.field, "parameters[0].step", "{low}..{high} by {step}");
        assert!(err.message.contains("must be at least"), "{}", err.message);
    }
    // An int grid beyond ±2^52 is inexact too.
    let err = SearchSpace::new(vec![stepped(ParameterType::Int, 0.0, 1e17, 1000.0)]).unwrap_err();
    assert_eq!(err.field, "parameters[0].step");
}

/// Ordinary and extreme-but-valid grids: each suggestion reads back, a client's decimal
/// of a grid point does, a value between points does not; an int grid within ±2^52 is
/// exact, whatever its step.
#[test]
fn grids_read_back_at_every_magnitude_they_accept() {
    let at = |x: f64| -> Params { numbers([("x", x)]) };
    for (kind, low, high, step, on, off) in [
        (
            ParameterType::Float,
            0.1,
            1.0,
            0.1,
            0.30000000000000004,
            0.35,
        ),
        (ParameterType::Float, 0.1, 1.0, 0.1, 0.3, 0.25000001),
        (
            ParameterType::Float,
            1e15,
            1e15 + 4096.0,
            128.0,
            1e15 + 384.0,
            1e15 + 320.0,
        ),
        (
            ParameterType::Float,
            -1e10,
            1e10,
            0.01,
            -9999999999.99,
            0.005,
        ),
        (ParameterType::Float, -1e10, 1e10, 0.01, 12345.67, 12345.675),
        (ParameterType::Int, 0.0, 1e7, 1.0, 9_999_999.0, 0.5),
        (
            ParameterType::Int,
            0.0,
            1e15,
            1.0,
            999_999_999_999_999.0,
            0.5,
        ),
        (
            ParameterType::Int,
            0.0,
            4_503_599_627_370_496.0,
            1024.0,
            2048.0,
            2049.0,
        ),
        (ParameterType::Int, 0.0, 1e11, 1e10, 3e10, 3e10 + 1.0),
    ] {
        let space = SearchSpace::new(vec![stepped(kind, low, high, step)]).unwrap();
        let case = format!("{low}..{high} by {step}");
        assert!(space.to_unit(&at(on), "params").is_ok(), "{case}: {on}");
        assert!(space.to_unit(&at(off), "params").is_err(), "{case}: {off}");
        for i in 0..=1000 {
            let u = i as f64 / 1000.0;
            let suggested = space.from_unit(&[u]);
            let unit = space.to_unit(&suggested, "params").unwrap();
            assert_eq!(space.snap(&[u]), unit, "{case} at {u}");
        }
    }
}

/// Over thousands of random grids of extreme magnitudes (bounds from subnormal to 1e100,
/// both signs; steps coarse, fine, near the least accepted, subnormal), every grid is
/// refused at `step` or has distinct, increasing points about a step apart, and every
/// suggestion lies in the bounds, on the grid, and reads back as `snap` gives it.
#[test]
fn accepted_grids_read_back_their_own_points() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let (mut accepted, mut refused, mut near_least) = (0, 0, 0);
    for _ in 0..4000 {
        let power = |rng: &mut rand_chacha::ChaCha8Rng, least: i32, most: i32| {
            rng.random::<f64>() * 10f64.powi(rng.random_range(least..=most))
        };
        let sign = |rng: &mut rand_chacha::ChaCha8Rng| {
            if rng.random::<bool>() { 1.0 } else { -1.0 }
        };
        let (mut low, mut high) = match rng.random_range(0..3) {
            // Narrow relative to the bounds' magnitude.
            0 => {
                let low = sign(&mut rng) * power(&mut rng, -310, 100);
                (low, low + low.abs() * power(&mut rng, -17, 0))
            }
            // Across zero.
            1 => (-power(&mut rng, -310, 100), power(&mut rng, -310, 100)),
            _ => {
                let a = sign(&mut rng) * power(&mut rng, -310, 100);
                let b = sign(&mut rng) * power(&mut rng, -310, 100);
                (a.min(b), a.max(b))
            }
        };
        let kind = if rng.random_range(0..4) == 0 {
            low = low.round();
            high = high.round();
            ParameterType::Int
        } else {
            ParameterType::Float
        };
        if !(high > low && high.abs() <= MAX_MAGNITUDE && low.abs() <= MAX_MAGNITUDE) {
            continue;
        }
        let magnitude = low.abs().max(high.abs());
        let least = GRID_MIN_STEP_ULPS * ulp(magnitude);
        let mut step = match rng.random_range(0..4) {
            0 => (high - low) / 10f64.powi(rng.random_range(0..17)),
            1 => least * (0.5 + 1.5 * rng.random::<f64>()),
            2 => 5e-324 * rng.random_range(1..1_000_000) as f64,
            _ => (high - low) * rng.random::<f64>(),
        };
        if kind == ParameterType::Int {
            step = step.round().max(1.0);
        }
        let space = match SearchSpace::new(vec![stepped(kind, low, high, step)]) {
            Ok(space) => space,
            Err(err) => {
                assert_eq!(err.field, "parameters[0].step", "{err:?}");
                refused += 1;
                continue;
            }
        };
        accepted += 1;
        if step < 2.0 * least {
            near_least += 1;
        }
        let case = format!("{kind:?} {low:e}..{high:e} by {step:e}");
        let span = high - low;
        let last = (span / step + GRID_TOLERANCE).floor();
        let mut units: Vec<f64> = (0..40).map(|_| rng.random::<f64>()).collect();
        units.extend([0.0, 1.0]);
        for _ in 0..10 {
            // Halfway between two grid points, where rounding decides.
            let k = (rng.random::<f64>() * last).floor();
            units.push(((k + 0.5) * step / span).min(1.0));
            // Two neighbouring points: distinct, about a step apart.
            let point = |k: f64| n(&space.from_unit(&[(k * step / span).min(1.0)])["x"]);
            let (a, b) = (point(k), point((k + 1.0).min(last)));
            if k < last {
                assert!(
                    b > a && (b - a - step).abs() <= step / 64.0,
                    "{case}: {a} {b}"
                );
            }
        }
        for u in units {
            let suggested = space.from_unit(&[u]);
            let value = n(&suggested["x"]);
            assert!((low..=high).contains(&value), "{case}: {u} -> {value}");
            if kind == ParameterType::Int {
                assert_eq!(value.fract(), 0.0, "{case}: {u} -> {value}");
            }
            let unit = space
                .to_unit(&suggested, "params")
                .unwrap_or_else(|err| panic!("{case}: {u} -> {value}: {err:?}"));
            assert_eq!(space.snap(&[u]), unit, "{case}: {u}");
            assert_eq!(space.snap(&unit), unit, "{case}: {u}");
        }
    }
    assert!(
        accepted > 1000 && refused > 500 && near_least > 200,
        "{accepted} accepted ({near_least} near the least step), {refused} refused"
    );
}
