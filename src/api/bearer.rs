//! The OpenAPI document's security: requests carry an API key as a bearer token, except
//! the health checks (docs/api.md, "Authentication").

use utoipa::Modify;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};

/// Adds the `bearer` scheme (HTTP bearer) to `components.securitySchemes`, requires it of
/// every operation (the document's `security`), and lifts it (`security: []`) from the
/// operations in [`BearerScheme::OPEN`].
pub(super) struct BearerScheme;

impl BearerScheme {
    /// The scheme's name in the document.
    const NAME: &str = "bearer";

    /// The operations that need no key, by operation id.
    const OPEN: [&str; 2] = ["healthz", "readyz"];
}

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some("An API key from `tvbo keys create`"))
            .build();
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(Self::NAME, SecurityScheme::Http(scheme));
        openapi.security = Some(vec![SecurityRequirement::new(
            Self::NAME,
            Vec::<String>::new(),
        )]);
        for operation in super::operations(openapi, "") {
            if Self::OPEN.contains(&operation.operation_id.as_deref().unwrap_or_default()) {
                operation.security = Some(Vec::new());
            }
        }
    }
}
