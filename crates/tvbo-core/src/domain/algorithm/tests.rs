use super::*;

#[test]
fn algorithm_names_serialise_as_their_api_names() {
    for kind in AlgorithmName::ALL {
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        let back: AlgorithmName = serde_json::from_value(kind.as_str().into()).unwrap();
        assert_eq!(back, kind);
    }
    // A configuration is named as its kind (the tag the API reads).
    let config: AlgorithmConfig =
        serde_json::from_value(serde_json::json!({"name": "w-dbo"})).unwrap();
    assert_eq!(
        serde_json::to_value(&config).unwrap()["name"],
        config.name()
    );
}

/// The list holds every algorithm once: a name left out of it would be one no listing
/// offers.
#[test]
fn the_list_of_algorithms_holds_each_once() {
    let mut names: Vec<&str> = AlgorithmName::ALL.iter().map(|a| a.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), AlgorithmName::ALL.len());
    // Each kind's facts agree with its configuration's: priors are required where a
    // configuration without them does not parse, and a parsed one is of its kind and
    // round-trips under its name.
    for kind in AlgorithmName::ALL {
        let bare = serde_json::json!({"name": kind.as_str()});
        let parsed = serde_json::from_value::<AlgorithmConfig>(bare);
        assert_eq!(
            parsed.is_err(),
            kind.priors() == PriorUse::Required,
            "{}",
            kind.as_str()
        );
        if let Ok(config) = parsed {
            assert_eq!(config.kind(), kind);
            assert!(config.check().is_ok(), "{}'s defaults", kind.as_str());
            let stored = serde_json::to_value(&config).unwrap();
            assert_eq!(stored["name"], kind.as_str());
            let back: AlgorithmConfig = serde_json::from_value(stored).unwrap();
            assert_eq!(back, config);
        }
    }
}

/// Every algorithm's options refuse a field they do not have (each options type
/// denies unknown fields; the tag `name` is not one of them).
#[test]
fn every_algorithm_refuses_an_unknown_option() {
    let priors = serde_json::json!([{"mean": [0, 0], "covariance": [[1, 0], [0, 1]]}]);
    for kind in AlgorithmName::ALL {
        let mut body = serde_json::json!({"name": kind.as_str(), "bogus": 1});
        if kind.priors() == PriorUse::Required {
            body["priors"] = priors.clone();
            let mut without = body.clone();
            without.as_object_mut().unwrap().remove("bogus");
            serde_json::from_value::<AlgorithmConfig>(without).unwrap();
        }
        let err = serde_json::from_value::<AlgorithmConfig>(body).unwrap_err();
        assert!(
            err.to_string().contains("bogus"),
            "{}: {err}",
            kind.as_str()
        );
    }
}

/// Options out of their range are refused naming the field.
#[test]
fn options_out_of_range_name_their_field() {
    let cases = [
        (
            serde_json::json!({"name": "r-gp-ucb", "reset_every": 0}),
            "algorithm.reset_every",
        ),
        (
            serde_json::json!({"name": "bolt", "max_dataset_size": 3}),
            "algorithm.max_dataset_size",
        ),
        (
            serde_json::json!({"name": "w-dbo", "alpha": 0.0}),
            "algorithm.alpha",
        ),
        (
            serde_json::json!({"name": "w-dbo", "min_dataset_size": 0}),
            "algorithm.min_dataset_size",
        ),
        (
            serde_json::json!({"name": "et-gp-ucb", "delta": 1.0}),
            "algorithm.delta",
        ),
        (
            serde_json::json!({"name": "gp-ucb", "beta": -1.0}),
            "algorithm.beta",
        ),
        (
            serde_json::json!({"name": "tv-gp-ucb", "epsilon": 1.5}),
            "algorithm.epsilon",
        ),
    ];
    for (body, field) in cases {
        let config: AlgorithmConfig = serde_json::from_value(body).unwrap();
        assert_eq!(config.check().unwrap_err().field, field);
    }
}
