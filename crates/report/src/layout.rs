//! Terminal layout: tables and wrapped prose that fit a given width. The text renderers build
//! every line through these, so that none is wider than the width they were given.

use crate::format::{NO_BREAK, glue_units};
use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width, presets};
use textwrap::core::display_width;

/// Width of text when the caller knows of no terminal (a pipe, a file).
pub const DEFAULT_WIDTH: usize = 80;
/// Narrowest width laid out: below it the widest tables cannot keep each value on one line.
pub const MIN_WIDTH: usize = 60;

/// Columns of prose keep at least this much room before headers give up theirs.
const PROSE_ROOM: usize = 16;

/// How a column's cells are aligned and whether they may wrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Col {
    /// Prose: left-aligned, wraps when the table is too wide.
    Text,
    /// Prose whose lines after the first are indented, so a wrapped cell reads as one.
    Hanging,
    /// A label or a number with its unit: its values never wrap (a number never parts from its
    /// unit); its header may.
    Left,
    Right,
}

impl Col {
    fn is_prose(self) -> bool {
        matches!(self, Col::Text | Col::Hanging)
    }
}

/// A borderless table, indented, whose columns are two spaces apart.
pub(crate) struct TextTable {
    columns: Vec<Col>,
    header: Option<Vec<String>>,
    rows: Vec<Vec<String>>,
    /// The table's width, less the indent before the first column's padding.
    width: usize,
    indent: usize,
}

impl TextTable {
    pub fn new(width: usize, indent: usize, columns: &[Col]) -> Self {
        // Padding is one space each side: the indent is laid out here, less the first padding.
        let width = width.max(MIN_WIDTH).saturating_sub(indent.saturating_sub(1));
        TextTable {
            columns: columns.to_vec(),
            header: None,
            rows: Vec::new(),
            width,
            indent: indent.saturating_sub(1),
        }
    }

    pub fn header<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.header = Some(cells.into_iter().map(Into::into).collect());
        self
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Widest cell of a column, in its rows and, with `header`, its header too.
    fn widest(&self, column: usize, header: bool) -> usize {
        let cell_width = |row: &Vec<String>| row.get(column).map_or(0, |text| display_width(text));
        let rows = self.rows.iter().map(cell_width).max().unwrap_or(0);
        match (&self.header, header) {
            (Some(cells), true) => rows.max(cell_width(cells)),
            _ => rows,
        }
    }

    /// The table's lines, each ending in a newline, without trailing spaces.
    pub fn render(&mut self) -> String {
        // Values never wrap; headers neither while there is room for them and for some prose.
        // Widths count the padding, one space each side.
        let prose = self.columns.iter().filter(|c| c.is_prose()).count();
        let fixed = |header: bool| -> usize {
            let values = self.columns.iter().enumerate().filter(|(_, c)| !c.is_prose());
            values.map(|(i, _)| self.widest(i, header) + 2).sum()
        };
        let with_headers = fixed(true) + prose * PROSE_ROOM <= self.width;
        let mut table = Table::new();
        table.load_preset(presets::NOTHING);
        table.set_content_arrangement(ContentArrangement::Dynamic);
        table.set_width(u16::try_from(self.width).unwrap_or(u16::MAX));
        // One column of prose is wrapped here, to the room the others leave, so that it can
        // hang its indent and keep numbers with their units; more are left to the table.
        let room = self.width.saturating_sub(fixed(with_headers) + 2);
        let wrapped =
            self.columns.iter().position(|c| c.is_prose()).filter(|_| prose == 1 && room >= PROSE_ROOM);
        let prose_width = wrapped.map(|i| self.widest(i, true).min(room));
        let cells = |row: &[String]| -> Vec<Cell> {
            row.iter()
                .enumerate()
                .map(|(i, text)| {
                    let text = match (wrapped, prose_width) {
                        (Some(column), Some(width)) if column == i => {
                            let rest = if self.columns[i] == Col::Hanging { "  " } else { "" };
                            wrap_lines(text, width, "", rest).join("\n")
                        }
                        _ => text.clone(),
                    };
                    let alignment = if self.columns.get(i) == Some(&Col::Right) {
                        CellAlignment::Right
                    } else {
                        CellAlignment::Left
                    };
                    Cell::new(text).set_alignment(alignment)
                })
                .collect()
        };
        if let Some(header) = &self.header {
            table.set_header(cells(header));
        }
        for row in &self.rows {
            table.add_row(cells(row));
        }
        for (index, kind) in self.columns.iter().enumerate() {
            let Some(column) = table.column_mut(index) else { continue };
            let constraint = match (kind.is_prose(), prose_width) {
                (false, _) => {
                    ColumnConstraint::LowerBoundary(fixed_width(self.widest(index, with_headers) + 2))
                }
                (true, Some(width)) if wrapped == Some(index) => {
                    ColumnConstraint::Absolute(fixed_width(width + 2))
                }
                (true, _) => continue,
            };
            column.set_constraint(constraint);
        }
        let mut out = String::new();
        for line in table.lines() {
            let line = line.trim_end();
            if !line.is_empty() {
                out.push_str(&" ".repeat(self.indent));
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

fn fixed_width(width: usize) -> Width {
    Width::Fixed(u16::try_from(width).unwrap_or(u16::MAX))
}

/// `text` wrapped at `width`, the first line after `first`, the others after `rest` (a
/// hanging indent); each line ends in a newline. A number stays on the line of its unit;
/// words longer than a line are broken.
pub(crate) fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    for line in wrap_lines(text, width.max(MIN_WIDTH), first, rest) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The lines of [`wrap`], at any width.
pub(crate) fn wrap_lines(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let options = textwrap::Options::new(width.max(1)).initial_indent(first).subsequent_indent(rest);
    textwrap::wrap(&glue_units(text), options)
        .iter()
        .map(|line| line.trim_end().replace(NO_BREAK, " "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_may_wrap_but_values_do_not() {
        let mut table = TextTable::new(MIN_WIDTH, 2, &[Col::Text, Col::Right, Col::Right, Col::Right]);
        table.header(["what", "a long header", "another long header", "and a third long header"]);
        table.row(["x".repeat(30), "44.01 ms".into(), "1.00 ms".into(), "0.00 ms".into()]);
        let text = table.render();
        assert!(text.lines().all(|l| display_width(l) <= MIN_WIDTH), "{text}");
        assert!(text.contains("44.01 ms") && text.contains("1.00 ms") && text.contains("0.00 ms"), "{text}");
    }

    #[test]
    fn a_table_fits_the_width_and_wraps_only_its_prose() {
        let mut table = TextTable::new(60, 2, &[Col::Text, Col::Right, Col::Right]);
        table.header(["measured", "resp.", "p50"]);
        table.row(["baseline: keep-alive, one connection, and more words to wrap", "40", "44.01 ms"]);
        let text = table.render();
        for line in text.lines() {
            assert!(display_width(line) <= 60, "{line:?} in\n{text}");
            assert!(line.starts_with("  "), "{text}");
        }
        let row = text.lines().nth(1).unwrap();
        assert!(row.starts_with("  baseline:") && row.ends_with("40  44.01 ms"), "{text}");
        assert!(text.lines().count() > 2, "the prose wrapped:\n{text}");
    }

    #[test]
    fn a_number_keeps_its_unit_on_its_line() {
        let text = format!("{} 12.5 ms, (3 %) and 2.97 KiB/s; 7 things", "x".repeat(MIN_WIDTH - 7));
        let wrapped = wrap(&text, MIN_WIDTH, "", "");
        assert_eq!(wrapped.lines().nth(1), Some("12.5 ms, (3 %) and 2.97 KiB/s; 7 things"), "{wrapped}");
        assert!(!wrapped.contains(NO_BREAK));
    }

    #[test]
    fn prose_wraps_with_a_hanging_indent() {
        let text = wrap(&"word ".repeat(30), 60, "  ", "    ");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines[0].starts_with("  word") && lines[1].starts_with("    word"), "{text}");
        assert!(lines.iter().all(|l| display_width(l) <= 60), "{text}");
    }
}
