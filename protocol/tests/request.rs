//! `ExecutorRequest::parse` and `AdminRequest::parse`: routing, upstream's messages, registry
//! limits, and inputs the fuzz targets (fuzz/) found interesting.

use jobwheel_protocol::request::{MAX_REGISTRY_GROUP_CHARS, MAX_REGISTRY_KEY_VALUE_CHARS};
use jobwheel_protocol::{
    AdminRequest, AdminRequestError, ExecutorRequest, ExecutorRequestError, KillParam, LogParam,
    RegistryParam,
};

#[test]
fn executor_requests_are_routed_by_path() {
    assert_eq!(ExecutorRequest::parse("/beat", b"not json"), Ok(ExecutorRequest::Beat));
    assert_eq!(
        ExecutorRequest::parse("/kill", br#"{"jobId":"7"}"#),
        Ok(ExecutorRequest::Kill(KillParam { job_id: 7 }))
    );
    assert_eq!(
        ExecutorRequest::parse("/log", br#"{"logDateTime":5,"logId":9,"fromLineNum":1}"#),
        Ok(ExecutorRequest::Log(LogParam::new(5, 9, 1)))
    );
    match ExecutorRequest::parse("/run", br#"{"jobId":1,"glueType":"BEAN","executorHandler":"demo"}"#) {
        Ok(ExecutorRequest::Run(p)) => assert_eq!((p.job_id, p.executor_handler.as_str()), (1, "demo")),
        other => panic!("{other:?}"),
    }
    assert_eq!(ExecutorRequest::parse("/run/", b"{}"), Err(ExecutorRequestError::UnknownPath));
    match ExecutorRequest::parse("/runBatch", br#"[{"jobId":1,"logId":"5"},{"jobId":2}]"#) {
        Ok(ExecutorRequest::RunBatch(batch)) => {
            assert_eq!(batch.iter().map(|p| (p.job_id, p.log_id)).collect::<Vec<_>>(), vec![(1, 5), (2, 0)]);
        }
        other => panic!("{other:?}"),
    }
    // A batch is a list: one trigger alone is refused, not taken as a batch of one.
    assert!(matches!(
        ExecutorRequest::parse("/runBatch", br#"{"jobId":1}"#),
        Err(ExecutorRequestError::InvalidBody(_))
    ));
}

#[test]
fn a_bad_executor_body_names_the_endpoint_and_shows_its_start() {
    let body = format!("{{\"jobId\": [{}", "x".repeat(500));
    let Err(ExecutorRequestError::InvalidBody(message)) =
        ExecutorRequest::parse("/idleBeat", body.as_bytes())
    else {
        panic!("accepted")
    };
    assert!(message.starts_with("request error: invalid JSON body for /idleBeat: "), "{message}");
    // Only the first 200 bytes are echoed.
    assert!(
        message.contains(&format!("{}\")", "x".repeat(189))) && !message.contains(&"x".repeat(191)),
        "{message}"
    );
    // A multi-byte character cut at byte 200 is shown lossily, not a panic.
    let cut = format!("{}é", "a".repeat(199));
    assert!(ExecutorRequest::parse("/kill", cut.as_bytes()).is_err());
}

#[test]
fn admin_requests_are_routed_and_validated() {
    let registration = br#"{"registryGroup":"EXECUTOR","registryKey":"app","registryValue":"http://h:1/"}"#;
    let expected = RegistryParam {
        registry_group: "EXECUTOR".into(),
        registry_key: "app".into(),
        registry_value: "http://h:1/".into(),
        incarnation: None,
    };
    assert_eq!(AdminRequest::parse("registry", registration), Ok(AdminRequest::Registry(expected.clone())));
    assert_eq!(
        AdminRequest::parse("registryRemove", registration),
        Ok(AdminRequest::RegistryRemove(expected))
    );
    match AdminRequest::parse("callback", br#"{"callbackList":[{"logId":3,"handleCode":200}]}"#) {
        Ok(AdminRequest::Callback(items)) => assert_eq!((items.len(), items[0].log_id), (1, 3)),
        other => panic!("{other:?}"),
    }
    let unknown = AdminRequest::parse("registri", registration).expect_err("unknown");
    assert_eq!(unknown.message(), "invalid request, uri-mapping(registri) not found.");
    let invalid = AdminRequest::parse("callback", b"{").expect_err("invalid");
    assert!(
        invalid.message().starts_with("request error: invalid JSON body for api/callback: "),
        "{invalid:?}"
    );
}

#[test]
fn blank_or_oversized_registry_fields_are_illegal() {
    let body = |group: &str, key: &str, value: &str| {
        serde_json::json!({"registryGroup": group, "registryKey": key, "registryValue": value}).to_string()
    };
    let long_group = "g".repeat(MAX_REGISTRY_GROUP_CHARS + 1);
    let long_key = "k".repeat(MAX_REGISTRY_KEY_VALUE_CHARS + 1);
    for bad in [
        body("EXECUTOR", " ", "v"),
        body("", "k", "v"),
        body(&long_group, "k", "v"),
        body("EXECUTOR", &long_key, "v"),
        body("EXECUTOR", "k", &long_key),
    ] {
        assert_eq!(
            AdminRequest::parse("registry", bad.as_bytes()),
            Err(AdminRequestError::IllegalArgument),
            "{bad}"
        );
    }
    // The limits count characters (the columns are varchar), not bytes.
    let wide = "é".repeat(MAX_REGISTRY_KEY_VALUE_CHARS);
    assert!(AdminRequest::parse("registry", body("EXECUTOR", &wide, "v").as_bytes()).is_ok());
    assert_eq!(AdminRequestError::IllegalArgument.message(), "Illegal Argument.");
}
