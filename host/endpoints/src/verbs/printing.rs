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
    inner: Arc<dyn crate::Context>,
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
            .plugins()
            .for_resource(&ctx.rt.group, &ctx.rt.resource, |h| h.print)?;
        let api_version = ctx.api_version();
        let kind = ctx.rt.kind.clone();
        let call = binding.plugin.columns(&api_version, &kind);
        Some(
            match binding.call(ctx.inner.metrics(), "columns", call).await {
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

    /// One row of cells per object, `date` cells shown as ages ([`rows_to_cells`]).
    pub(crate) async fn cells(&self, objs: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let name = &self.binding.name;
        let raw: Vec<String> = objs.iter().map(Value::to_string).collect();
        let call = self
            .binding
            .plugin
            .rows(&self.api_version, &self.kind, &raw);
        let rows = match self.binding.call(self.inner.metrics(), "rows", call).await {
            Ok(Ok(rows)) => rows,
            Ok(Err(status)) => {
                return Err(format!(
                    "printer plugin {name:?} refused: {}",
                    status.message
                ));
            }
            Err(e) => return Err(format!("printer plugin {name:?} failed: {e}")),
        };
        rows_to_cells(name, &self.columns, rows, time::OffsetDateTime::now_utc())
    }
}

/// A printer plugin's rows (cells as JSON text) as Table cells: each row has one cell per
/// column, each cell is JSON, and the cells of `date` columns are shown as kube's printers
/// show them, ages (`7s`, `5m`, `3d`) computed here at `now` ([`table::date_cell`], the
/// same as for a CRD's printer columns): the plugin's clock is stopped, it cannot.
fn rows_to_cells(
    name: &str,
    columns: &[ColumnDefinition],
    rows: Vec<Vec<String>>,
    now: time::OffsetDateTime,
) -> Result<Vec<Vec<Value>>, String> {
    rows.into_iter()
        .map(|row| {
            if row.len() != columns.len() {
                return Err(format!(
                    "printer plugin {name:?} gave {} cells for {} columns",
                    row.len(),
                    columns.len()
                ));
            }
            row.iter()
                .zip(columns)
                .map(|(c, col)| {
                    let v: Value = serde_json::from_str(c).map_err(|e| {
                        format!("printer plugin {name:?} gave a cell that is not JSON: {e}")
                    })?;
                    Ok(if col.type_ == "date" {
                        table::date_cell(Some(&v), now)
                    } else {
                        v
                    })
                })
                .collect()
        })
        .collect()
}

impl Ctx {
    /// The columns and rows of a table of `objs` (`includeObject` applied).
    pub(crate) async fn table_parts(
        &self,
        objs: &[Value],
        out: MetaVersion,
    ) -> ApiResult<(Vec<ColumnDefinition>, Vec<TableRow>)> {
        let include = self.encoding.include_object()?;
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
            .map(|o| row(self.kind().table_cells(o, now), o))
            .collect();
        Ok((self.kind().table_columns(), rows))
    }

    fn printer_failed(&self, why: String) {
        tracing::warn!("{why}");
        self.late_warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{why}; showing the default columns"));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use serde_json::json;

    use super::*;

    /// Issue 25 item 8: a printer plugin's `date` cells (the widgets plugin prints
    /// `metadata.creationTimestamp`) are shown as ages, as kube prints a CRD's `date`
    /// columns; the other cells are left as the plugin gave them.
    #[test]
    fn a_plugins_date_cells_are_shown_as_ages() {
        let col = |name: &str, type_: &str| ColumnDefinition {
            name: name.into(),
            type_: type_.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
        };
        let columns = [
            col("Name", "string"),
            col("Age", "date"),
            col("When", "string"),
        ];
        let now = time::macros::datetime!(2026-11-27 07:01:24 UTC);
        let rows = vec![
            vec![
                r#""a""#.to_owned(),
                r#""2026-11-27T06:56:24Z""#.to_owned(),
                r#""2026-11-27T06:56:24Z""#.to_owned(),
            ],
            vec![r#""b""#.into(), r#""not a time""#.into(), "null".into()],
            vec![r#""c""#.into(), "null".into(), "3".into()],
        ];
        let cells = rows_to_cells("p", &columns, rows, now).unwrap();
        assert_eq!(
            cells[0],
            [json!("a"), json!("5m"), json!("2026-11-27T06:56:24Z")]
        );
        assert_eq!(cells[1], [json!("b"), json!("<invalid>"), Value::Null]);
        assert_eq!(cells[2], [json!("c"), Value::Null, json!(3)]);
        let short = rows_to_cells("p", &columns, vec![vec!["1".into()]], now).unwrap_err();
        assert_eq!(short, r#"printer plugin "p" gave 1 cells for 3 columns"#);
    }
}
