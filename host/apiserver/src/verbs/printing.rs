//! Tables by a printer plugin: when a `WasmPlugin` with the `print` hook is bound to the
//! resource's group (and resource), `kubectl get` shows its columns and cells instead of
//! the kind's printer columns. A printer that fails (or answers with the wrong number of
//! cells) never fails a read: the table falls back to the kind's columns, with a `Warning`.

use std::sync::Arc;

use serde_json::Value;
use wasmgate_apimachinery::media::MetaVersion;
use wasmgate_apimachinery::table::{self, ColumnDefinition, TableRow};

use super::Ctx;
use crate::error::ApiResult;
use crate::plugins::Binding;

/// The printer plugin of one request, with the columns it gave.
pub(crate) struct PluginPrinter {
    binding: Arc<Binding>,
    inner: Arc<crate::Inner>,
    api_version: String,
    kind: String,
    pub(crate) columns: Vec<ColumnDefinition>,
}

impl PluginPrinter {
    /// The printer bound to the request's resource, with its columns; `None` when there
    /// is none, `Some(Err)` when it failed.
    pub(crate) async fn for_request(ctx: &Ctx) -> Option<Result<PluginPrinter, String>> {
        let binding = ctx
            .inner
            .plugins
            .for_resource(&ctx.rt.group, &ctx.rt.resource, |h| h.print)?;
        let api_version = ctx.api_version();
        let kind = ctx.rt.kind.clone();
        let call = binding.plugin.columns(&api_version, &kind);
        Some(
            match binding.call(&ctx.inner.metrics, "columns", call).await {
                Ok(cols) if !cols.is_empty() => Ok(PluginPrinter {
                    columns: cols
                        .into_iter()
                        .map(|c| ColumnDefinition {
                            name: c.name,
                            type_: c.type_,
                            format: c.format,
                            description: c.description,
                            priority: c.priority,
                        })
                        .collect(),
                    binding,
                    inner: ctx.inner.clone(),
                    api_version,
                    kind,
                }),
                Ok(_) => Err(format!("printer plugin {:?} gave no columns", binding.name)),
                Err(e) => Err(format!("printer plugin {:?} failed: {e}", binding.name)),
            },
        )
    }

    /// One row of cells per object.
    pub(crate) async fn cells(&self, objs: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let name = &self.binding.name;
        let raw: Vec<String> = objs.iter().map(Value::to_string).collect();
        let call = self
            .binding
            .plugin
            .rows(&self.api_version, &self.kind, &raw);
        let rows = match self.binding.call(&self.inner.metrics, "rows", call).await {
            Ok(Ok(rows)) => rows,
            Ok(Err(status)) => {
                return Err(format!(
                    "printer plugin {name:?} refused: {}",
                    status.message
                ));
            }
            Err(e) => return Err(format!("printer plugin {name:?} failed: {e}")),
        };
        rows.into_iter()
            .map(|row| {
                if row.len() != self.columns.len() {
                    return Err(format!(
                        "printer plugin {name:?} gave {} cells for {} columns",
                        row.len(),
                        self.columns.len()
                    ));
                }
                row.iter()
                    .map(|c| {
                        serde_json::from_str(c).map_err(|e| {
                            format!("printer plugin {name:?} gave a cell that is not JSON: {e}")
                        })
                    })
                    .collect()
            })
            .collect()
    }
}

impl Ctx {
    /// The columns and rows of a table of `objs` (`includeObject` applied).
    pub(crate) async fn table_parts(
        &self,
        objs: &[Value],
        out: MetaVersion,
    ) -> ApiResult<(Vec<ColumnDefinition>, Vec<TableRow>)> {
        let include = self.include_object()?;
        let row = |cells: Vec<Value>, o: &Value| TableRow {
            cells,
            conditions: None,
            object: table::row_object(o, include, out.api_version()),
        };
        match PluginPrinter::for_request(self).await {
            Some(Ok(p)) => match p.cells(objs).await {
                Ok(cells) => {
                    let rows = cells
                        .into_iter()
                        .zip(objs)
                        .map(|(c, o)| row(c, o))
                        .collect();
                    return Ok((p.columns, rows));
                }
                Err(e) => self.printer_failed(e),
            },
            Some(Err(e)) => self.printer_failed(e),
            None => {}
        }
        let now = time::OffsetDateTime::now_utc();
        let rows = objs
            .iter()
            .map(|o| row(self.table_cells(o, now), o))
            .collect();
        Ok((self.table_columns(), rows))
    }

    fn printer_failed(&self, why: String) {
        tracing::warn!("{why}");
        self.late_warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{why}; showing the default columns"));
    }
}
