// Starts Swagger UI on the server's own OpenAPI document (docs/api.md, "API docs").
// Its own file, not an inline script, so that the page's content security policy can
// forbid inline scripts. Deferred: it runs after the bundle, once the body is parsed.
"use strict";

// The path prefix a reverse proxy serves tvbo under ("" at the root): TVBO_BASE_PATH.
const base = document.body.dataset.base;

window.ui = SwaggerUIBundle({
  url: base + "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  // No call to validator.swagger.io: the page talks to this server only.
  validatorUrl: null,
  // The document names no server, so "Try it out" requests go to this origin's root;
  // behind a proxy they need the prefix too.
  requestInterceptor: (request) => {
    if (base && !request.loadSpec) {
      const url = new URL(request.url, window.location.href);
      url.pathname = base + url.pathname;
      request.url = url.href;
    }
    return request;
  },
});
