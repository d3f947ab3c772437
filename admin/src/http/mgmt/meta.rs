//! `/api/v1/meta` (the enums the forms offer, with titles in the admin's language) and
//! `/api/v1/openapi.json` (the API's machine-readable description).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use jobwheel_protocol::{BlockStrategy, GlueType};
use serde::Serialize;

use super::auth::Principal;
use crate::cron::ScheduleType;
use crate::domain::MisfireStrategy;
use crate::engine::block_title;
use crate::http::MgmtState;
use crate::lang::MessageLang;
use crate::routing::ExecutorRouteStrategy;

/// The OpenAPI 3.1 document, kept beside the code it describes (a test checks that every route
/// of the router appears in it).
pub(crate) const OPENAPI: &str = include_str!("openapi.json");

#[derive(Serialize)]
pub(crate) struct Choice {
    name: &'static str,
    title: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Meta {
    glue_types: Vec<Choice>,
    schedule_types: Vec<Choice>,
    misfire_strategies: Vec<Choice>,
    route_strategies: Vec<Choice>,
    block_strategies: Vec<Choice>,
    i18n: &'static str,
    version: &'static str,
}

/// `GET /api/v1/meta`.
pub(crate) async fn meta(State(state): State<Arc<MgmtState>>, _principal: Principal) -> Json<Meta> {
    let zh = state.lang == MessageLang::Zh;
    let pick = |en: &'static str, zh_title: &'static str| if zh { zh_title } else { en };
    Json(Meta {
        // GLUE(Java) too: the admin keeps and sends its source; a JVM executor runs it.
        glue_types: GlueType::ALL.into_iter().map(|g| Choice { name: g.name(), title: g.title() }).collect(),
        schedule_types: ScheduleType::ALL
            .into_iter()
            .map(|s| Choice { name: s.name(), title: pick(s.title_en(), s.title_zh()) })
            .collect(),
        misfire_strategies: MisfireStrategy::ALL
            .into_iter()
            .map(|m| Choice { name: m.name(), title: pick(m.title_en(), m.title_zh()) })
            .collect(),
        route_strategies: ExecutorRouteStrategy::ALL
            .into_iter()
            .map(|r| Choice { name: r.name(), title: pick(r.title_en(), r.title_zh()) })
            .collect(),
        block_strategies: BlockStrategy::ALL
            .into_iter()
            .map(|b| Choice { name: b.name(), title: block_title(Some(b.name()), state.lang) })
            .collect(),
        i18n: if zh { "zh_CN" } else { "en" },
        version: env!("CARGO_PKG_VERSION"),
    })
}

/// `GET /api/v1/openapi.json` (public: it describes, it does not reveal).
pub(crate) async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}
