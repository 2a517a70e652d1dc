//! Terminal tables that fit a given width: values kept whole, prose cells wrapped, and a table
//! too wide split into parts, or its labels or prose set on lines of their own. The text
//! renderers build every table through [`TextTable`], so that none is wider than its width.

use crate::text::MIN_WIDTH;
use crate::text::wrap::{glue_units, wrap_words};
use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width, presets};
use textwrap::core::display_width;

/// Columns of prose keep at least this much room before headers give up theirs.
const PROSE_ROOM: usize = 16;
/// A table too wide whose labels are no longer than this repeats them, unwrapped, in each
/// part; longer ones go above their rows' values.
const LABEL_KEPT_WHOLE: usize = 24;

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

/// How a table is laid out: whole, or, when its values need more than its width, in parts
/// that each repeat the key columns, with each row's label on a line above its values, or with
/// each row's prose under its values.
enum Layout {
    Whole,
    /// The columns of each part, keys first.
    Parts(Vec<Vec<usize>>),
    LabelsAbove,
    /// The values of each row on a line, its prose (the last column) under them.
    ProseBelow,
}

/// A borderless table, indented, whose columns are two spaces apart.
pub(crate) struct TextTable {
    columns: Vec<Col>,
    header: Option<Vec<String>>,
    rows: Vec<Vec<String>>,
    /// The table's width, less the indent before the first column's padding.
    width: usize,
    indent: usize,
    /// Leading columns that name a row (a label, a label and a figure): each part of a table
    /// too wide to lay out whole repeats them.
    keys: usize,
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
            keys: 1,
        }
    }

    /// How many leading columns name a row (1 unless said).
    pub fn keys(&mut self, keys: usize) -> &mut Self {
        self.keys = keys.max(1);
        self
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

    /// Width a column needs when its header wraps between words: its widest value, or its
    /// header's longest word, whichever is wider (a header broken inside a word reads as
    /// letters stacked).
    fn fit_width(&self, column: usize) -> usize {
        let longest_word = self
            .header
            .as_ref()
            .and_then(|cells| cells.get(column))
            .map_or(0, |text| text.split_whitespace().map(display_width).max().unwrap_or(0));
        self.widest(column, false).max(longest_word)
    }

    /// A value column's width as drawn: with its header on one line, or wrapped between words.
    fn drawn_width(&self, column: usize, headers_whole: bool) -> usize {
        if headers_whole { self.widest(column, true) } else { self.fit_width(column) }
    }

    /// A column's width with its padding, one space each side, its header wrapped if need be.
    fn need(&self, column: usize) -> usize {
        self.fit_width(column) + 2
    }

    /// The room a prose column asks for before the headers beside it give up theirs: a
    /// label short enough to repeat in parts, whole; longer prose, [`PROSE_ROOM`].
    fn prose_wanted(&self, column: usize) -> usize {
        let widest = self.widest(column, false);
        if widest <= LABEL_KEPT_WHOLE { widest.max(1) } else { PROSE_ROOM }
    }

    /// Whether the value columns keep their headers on one line: while that leaves the prose
    /// the room it asks for.
    fn headers_whole(&self) -> bool {
        let values: usize = (0..self.columns.len())
            .filter(|&i| !self.columns[i].is_prose())
            .map(|i| self.widest(i, true) + 2)
            .sum();
        let prose: usize = (0..self.columns.len())
            .filter(|&i| self.columns[i].is_prose())
            .map(|i| self.prose_wanted(i) + 2)
            .sum();
        values + prose <= self.width
    }

    /// The room a single prose column gets beside the values, as [`Self::render_whole`] lays
    /// them out (with their padding, and the prose's own).
    fn prose_room(&self) -> usize {
        let whole = self.headers_whole();
        let values: usize = (0..self.columns.len())
            .filter(|&i| !self.columns[i].is_prose())
            .map(|i| self.drawn_width(i, whole) + 2)
            .sum();
        self.width.saturating_sub(values + 2)
    }

    /// How the table is laid out: whole while it fits its width (its headers wrapped between
    /// words if they must, its prose wrapped while it keeps some room); else in parts, with
    /// labels above their values, or with prose below them.
    fn layout(&self) -> Layout {
        let count = self.columns.len();
        if self.columns.iter().all(|c| !c.is_prose()) {
            let keys: Vec<usize> = (0..self.keys.min(count)).collect();
            let others: Vec<usize> = (keys.len()..count).collect();
            let parts = self.split(&keys, &others, self.width);
            return if parts.len() > 1 { Layout::Parts(parts) } else { Layout::Whole };
        }
        let values_then_prose = count >= 2
            && self.columns[count - 1].is_prose()
            && self.columns[..count - 1].iter().all(|c| !c.is_prose());
        if values_then_prose {
            // Prose that would have to cut a word (a code snippet, a command) to fit beside the
            // values goes under them, as wide as the table; a hanging indent takes 2 more.
            let hanging = if self.columns[count - 1] == Col::Hanging { 2 } else { 0 };
            let room = self.prose_room().saturating_sub(hanging);
            let longest_word = self
                .rows
                .iter()
                .filter_map(|row| row.get(count - 1))
                .flat_map(|cell| glue_units(cell).split(' ').map(display_width).collect::<Vec<_>>());
            return if longest_word.max().unwrap_or(0) > room { Layout::ProseBelow } else { Layout::Whole };
        }
        let label_and_values = self.columns[0].is_prose() && self.columns[1..].iter().all(|c| !c.is_prose());
        if !label_and_values || count < 3 {
            return Layout::Whole;
        }
        let room = self.width.saturating_sub((1..count).map(|i| self.need(i)).sum::<usize>() + 2);
        let longest_label = self.widest(0, false);
        if room >= PROSE_ROOM.min(longest_label) {
            Layout::Whole
        } else if longest_label <= LABEL_KEPT_WHOLE {
            Layout::Parts(self.split(&[0], &(1..count).collect::<Vec<_>>(), self.width))
        } else {
            Layout::LabelsAbove
        }
    }

    /// `columns` in parts that each fit `width` beside the `keys` that lead every part, in
    /// order; a part holds at least one column beside the keys, whatever its width.
    fn split(&self, keys: &[usize], columns: &[usize], width: usize) -> Vec<Vec<usize>> {
        // The last column's right padding is trimmed off the line: one column more fits.
        let width = width + 1;
        let keys_need: usize = keys.iter().map(|&i| self.need(i)).sum();
        let mut parts: Vec<Vec<usize>> = Vec::new();
        let mut current = keys.to_vec();
        let mut used = keys_need;
        for &column in columns {
            if used + self.need(column) > width && current.len() > keys.len() {
                parts.push(std::mem::replace(&mut current, keys.to_vec()));
                used = keys_need;
            }
            current.push(column);
            used += self.need(column);
        }
        parts.push(current);
        parts
    }

    /// The same table with only `columns` (their cells, header and kinds), as wide.
    fn subset(&self, columns: &[usize], width: usize, indent: usize) -> TextTable {
        let pick = |row: &Vec<String>| -> Vec<String> {
            columns.iter().map(|&i| row.get(i).cloned().unwrap_or_default()).collect()
        };
        TextTable {
            columns: columns.iter().map(|&i| self.columns[i]).collect(),
            header: self.header.as_ref().map(pick),
            rows: self.rows.iter().map(pick).collect(),
            width,
            indent,
            keys: self.keys,
        }
    }

    /// The table's lines, each ending in a newline, without trailing spaces. A table too wide
    /// for its width is laid out in parts, one under the other, a blank line apart; one whose
    /// labels would be squeezed puts each label above its row; one whose prose would be cut
    /// mid-word puts it under its row (see [`Self::layout`]).
    pub fn render(&self) -> String {
        match self.layout() {
            Layout::Whole => self.render_whole(),
            Layout::LabelsAbove => self.render_labels_above(),
            Layout::ProseBelow => self.render_prose_below(),
            Layout::Parts(parts) => {
                let rendered: Vec<String> = parts
                    .iter()
                    .map(|columns| self.subset(columns, self.width, self.indent).render_whole())
                    .collect();
                rendered.join("\n")
            }
        }
    }

    /// The table laid out whole, its headers wrapped between words if they must.
    fn render_whole(&self) -> String {
        // Values never wrap; headers neither while there is room for them and for some prose,
        // and then only between words. Widths count the padding, one space each side.
        let prose = self.columns.iter().filter(|c| c.is_prose()).count();
        let with_headers = self.headers_whole();
        let mut table = Table::new();
        table.load_preset(presets::NOTHING);
        table.set_content_arrangement(ContentArrangement::Dynamic);
        table.set_width(u16::try_from(self.width).unwrap_or(u16::MAX));
        // One column of prose is wrapped here, to the room the others leave, so that it can
        // hang its indent and keep numbers with their units; more are left to the table.
        let room = self.prose_room();
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
                            wrap_words(text, width, "", rest).join("\n")
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
                    ColumnConstraint::LowerBoundary(fixed_width(self.drawn_width(index, with_headers) + 2))
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

    /// The lines of a table of `columns`, values only, `width` wide behind `indent`: its
    /// header's lines, then one line per row. A value never wraps, so each row is one line
    /// once a line break inside a value is a space and a row without any value shows "-".
    fn value_lines(&self, columns: &[usize], width: usize, indent: usize) -> (Vec<String>, Vec<String>) {
        let mut values = self.subset(columns, width, indent);
        for row in &mut values.rows {
            row.iter_mut().for_each(|cell| *cell = cell.replace(['\n', '\r'], " "));
            if row.iter().all(|cell| cell.trim().is_empty())
                && let Some(first) = row.first_mut()
            {
                *first = "-".into();
            }
        }
        let rendered = values.render_whole();
        let mut lines: Vec<String> = rendered.lines().map(str::to_string).collect();
        let rows = lines.split_off(lines.len().saturating_sub(self.rows.len()));
        (lines, rows)
    }

    /// `text` wrapped at the table's whole width behind `indent`, hanging 2 more if `column`
    /// hangs; nothing for an empty cell.
    fn push_prose(&self, out: &mut String, column: usize, text: &str, indent: &str) {
        if text.trim().is_empty() {
            return;
        }
        let rest =
            if self.columns[column] == Col::Hanging { format!("{indent}  ") } else { indent.to_string() };
        for line in wrap_words(text, self.width + self.indent, indent, &rest) {
            out.push_str(&line);
            out.push('\n');
        }
    }

    /// Each row's values on a line (as a table of their own, so that they align), and its
    /// prose under them, two columns further in and as wide as the table.
    fn render_prose_below(&self) -> String {
        let prose = self.columns.len() - 1;
        let values: Vec<usize> = (0..prose).collect();
        let (header, rows) = self.value_lines(&values, self.width, self.indent);
        let indent = " ".repeat(self.indent + 3);
        let mut out = String::new();
        for line in header {
            out.push_str(&line);
            out.push('\n');
        }
        for (row, values) in self.rows.iter().zip(rows) {
            out.push_str(&values);
            out.push('\n');
            self.push_prose(&mut out, prose, row.get(prose).map_or("", String::as_str), &indent);
        }
        out
    }

    /// The values as a table of their own (in parts if they need), two columns further in,
    /// and each row's label wrapped to the whole width on the line above its values.
    fn render_labels_above(&self) -> String {
        let values: Vec<usize> = (1..self.columns.len()).collect();
        let width = self.width.saturating_sub(2);
        let indent = " ".repeat(self.indent + 1);
        let mut parts = Vec::new();
        for columns in self.split(&[], &values, width) {
            let (header, rows) = self.value_lines(&columns, width, self.indent + 2);
            let mut out = String::new();
            for line in header {
                out.push_str(&line);
                out.push('\n');
            }
            for (row, values) in self.rows.iter().zip(rows) {
                self.push_prose(&mut out, 0, row.first().map_or("", String::as_str), &indent);
                out.push_str(&values);
                out.push('\n');
            }
            parts.push(out);
        }
        parts.join("\n")
    }
}

fn fixed_width(width: usize) -> Width {
    Width::Fixed(u16::try_from(width).unwrap_or(u16::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::wrap::{NO_BREAK, wrap};

    /// Tables of every shape the renderers make (values only, a label then values, with keys),
    /// with cells of random widths, at widths 60 to 140: each value whole on one line, and
    /// every line within the width whenever the keys and the widest value column fit it.
    #[test]
    fn any_table_keeps_its_values_whole_and_fits_when_its_widest_column_can() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |below: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % below
        };
        let words = ["p50", "read gap", "1st byte", "µs", "connections", "a", "per request", "errors"];
        for case in 0..2000 {
            let columns = 2 + next(8);
            let labelled = next(2) == 0;
            let kinds: Vec<Col> = (0..columns)
                .map(|i| match (i, labelled) {
                    (0, true) => [Col::Text, Col::Hanging][next(2)],
                    (0, false) => Col::Left,
                    _ => [Col::Left, Col::Right][next(2)],
                })
                .collect();
            let width = 60 + next(81);
            let mut table = TextTable::new(width, 2, &kinds);
            if !labelled && columns > 3 && next(2) == 0 {
                table.keys(2);
            }
            table.header((0..columns).map(|_| words[next(words.len())]));
            let mut rows = Vec::new();
            for _ in 0..1 + next(4) {
                let row: Vec<String> = (0..columns)
                    .map(|i| {
                        let long = if i == 0 && labelled { 60 } else { 14 };
                        let words: Vec<String> =
                            (0..1 + next(long / 6)).map(|_| "x".repeat(1 + next(6))).collect();
                        if i == 0 && labelled {
                            words.join(" ")
                        } else {
                            format!("{}.{} µs", next(9999), next(99))
                        }
                    })
                    .collect();
                table.row(row.clone());
                rows.push(row);
            }
            let text = table.render();
            let first_value = usize::from(labelled);
            for row in &rows {
                for value in &row[first_value..] {
                    assert!(text.contains(value.as_str()), "case {case}: {value:?} whole in\n{text}");
                }
            }
            let keys = if labelled { 0 } else { table.keys };
            let keys_need: usize = (0..keys).map(|i| table.fit_width(i) + 2).sum();
            let widest = (keys.max(1)..columns).map(|i| table.fit_width(i) + 2).max().unwrap_or(0);
            if keys_need + widest <= table.width {
                for line in text.lines() {
                    assert!(display_width(line) <= width, "case {case}, width {width}: {line:?} in\n{text}");
                }
            }
        }
    }

    #[test]
    fn a_header_may_wrap_but_values_do_not() {
        let mut table = TextTable::new(MIN_WIDTH, 2, &[Col::Text, Col::Right, Col::Right, Col::Right]);
        table.header(["what", "a long header", "another long header", "and a third long header"]);
        table.row(["x".repeat(30), "44.01 ms".into(), "1.00 ms".into(), "0.00 ms".into()]);
        let text = table.render();
        assert!(text.lines().all(|l| display_width(l) <= MIN_WIDTH), "{text}");
        assert!(text.contains("44.01 ms") && text.contains("1.00 ms") && text.contains("0.00 ms"), "{text}");
    }

    /// Every word of `header` appears whole in `text`: a header wrapped between words, never
    /// inside one.
    fn headers_whole(text: &str, header: &[&str]) -> bool {
        header
            .iter()
            .flat_map(|cell| cell.split_whitespace())
            .all(|word| text.lines().any(|line| line.split_whitespace().any(|cell_word| cell_word == word)))
    }

    #[test]
    fn a_table_too_wide_for_its_values_is_laid_out_in_parts_led_by_its_labels() {
        // `nodelay compare`'s figures at 60 columns: the values alone need 74.
        let header = ["target", "req/s", "p50", "p90", "p99", "1st byte", "read gap", "errors"];
        let mut table = TextTable::new(
            60,
            2,
            &[Col::Left, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right],
        );
        table.header(header);
        table.row(["python", "2429.6", "790.5 µs", "1.11 ms", "1.47 ms", "745.0 µs", "10.8 µs", "0"]);
        table.row(["python-again", "2586.7", "758.8 µs", "1.02 ms", "1.32 ms", "715.3 µs", "2.2 µs", "0"]);
        let text = table.render();
        assert!(text.lines().all(|l| display_width(l) <= 60), "{text}");
        assert!(headers_whole(&text, &header), "{text}");
        let parts: Vec<&str> = text.split("\n\n").collect();
        assert!(parts.len() >= 2, "{text}");
        for part in &parts {
            assert!(part.starts_with("  target"), "each part is led by the label column:\n{text}");
            assert!(part.contains("  python-again"), "{text}");
        }
        for value in ["2429.6", "790.5 µs", "10.8 µs", "715.3 µs"] {
            assert_eq!(text.matches(value).count(), 1, "{value} once in\n{text}");
        }
        // At 80 columns the same table is one.
        let mut wide = TextTable::new(
            80,
            2,
            &[Col::Left, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right],
        );
        wide.header(header);
        wide.row(["python", "2429.6", "790.5 µs", "1.11 ms", "1.47 ms", "745.0 µs", "10.8 µs", "0"]);
        let text = wide.render();
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    /// The doctor's phases and the per-request table: a label of prose, then values.
    fn labelled(labels: &[&str]) -> TextTable {
        let mut table = TextTable::new(
            60,
            2,
            &[
                Col::Hanging,
                Col::Right,
                Col::Right,
                Col::Right,
                Col::Right,
                Col::Right,
                Col::Right,
                Col::Right,
            ],
        );
        table.header(["measured", "done", "errors", "non-ok", "p50", "p99", "1st byte", "read gap"]);
        for label in labels {
            table.row(figures(label));
        }
        table
    }

    /// A row of [`labelled`]: its label, then its seven figures.
    fn figures(label: &str) -> [String; 8] {
        [label, "25", "0", "0", "1.20 ms", "2.47 ms", "1.12 ms", "16.5 µs"].map(str::to_string)
    }

    #[test]
    fn short_labels_beside_too_many_values_lead_each_part_of_the_table() {
        let text = labelled(&["main page", "build page"]).render();
        assert!(text.lines().all(|l| display_width(l) <= 60), "{text}");
        let parts: Vec<&str> = text.split("\n\n").collect();
        assert_eq!(parts.len(), 2, "{text}");
        for part in parts {
            let lines: Vec<&str> = part.lines().collect();
            assert!(lines[1].starts_with("  main page ") && lines[2].starts_with("  build page "), "{text}");
        }
    }

    #[test]
    fn long_labels_beside_too_many_values_go_above_their_rows() {
        let label = "baseline: keep-alive, one connection, and words enough to wrap at sixty columns";
        let text = labelled(&[label, "fresh connection per request"]).render();
        assert!(text.lines().all(|l| display_width(l) <= 60), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let first = lines.iter().position(|l| l.starts_with("  baseline:")).expect("the label");
        assert!(lines[first + 1].starts_with("    "), "a wrapped label hangs:\n{text}");
        let values = lines.iter().position(|l| l.trim_start().starts_with("25 ")).expect("values");
        assert!(values > first + 1 && lines[values + 1] == "  fresh connection per request", "{text}");
        assert!(text.matches("16.5 µs").count() == 2 && !text.contains("measured"), "{text}");
        // Room beside the values at 132 columns: one table, labels in their column.
        let mut wide = labelled(&[label]);
        wide.width = 132;
        let text = wide.render();
        let row = text.lines().nth(1).unwrap_or_default();
        assert!(row.starts_with("  baseline:") && row.ends_with("16.5 µs"), "{text}");
    }

    /// The doctor's fixes: a stack, then how to fix it, which holds code that must not be cut.
    #[test]
    fn prose_that_would_cut_a_word_beside_its_values_goes_under_them() {
        let fixes = |width: usize| {
            let mut table = TextTable::new(width, 4, &[Col::Left, Col::Hanging]);
            table.row([
                "Python http.server / socketserver",
                "set disable_nagle_algorithm = True on the handler",
            ]);
            table.row([
                "Rust tokio / axum",
                "TcpStream::set_nodelay(true); axum::serve::ListenerExt in scope",
            ]);
            table.render()
        };
        let text = fixes(60);
        assert!(text.lines().all(|l| display_width(l) <= 60), "{text}");
        for code in ["disable_nagle_algorithm", "TcpStream::set_nodelay(true);", "axum::serve::ListenerExt"] {
            assert!(text.contains(code), "{code} whole in\n{text}");
        }
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "    Python http.server / socketserver", "{text}");
        assert!(lines[1].starts_with("      set disable_nagle_algorithm"), "{text}");
        // With room for every word beside the stacks, one line a row.
        assert_eq!(fixes(132).lines().count(), 2, "{}", fixes(132));
    }

    /// The last column's right padding is trimmed: a table that fits to the column stays whole
    /// (the bench's histogram at 60 columns was split in two).
    #[test]
    fn a_table_that_fits_exactly_is_not_split() {
        let mut table = TextTable::new(60, 2, &[Col::Left, Col::Right, Col::Right]);
        table.row(["a".repeat(20), "b".repeat(16), "c".repeat(18)]);
        let text = table.render();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert_eq!(display_width(text.lines().next().unwrap()), 60, "{text}");
    }

    /// Every word of the prose whole, at every width: the plan and the drawing agree on the
    /// room beside the values, headers and hanging indent counted (a .NET fix was cut at 85).
    #[test]
    fn prose_beside_values_never_cuts_a_word_that_fits_a_line() {
        let how = "set DefaultRequestHeaders.ExpectContinue = false; or HttpClientHandler.Expect100Continue";
        for width in 60..=140 {
            for header in [None, Some(["stack name here", "fix"])] {
                let mut table = TextTable::new(width, 4, &[Col::Left, Col::Hanging]);
                if let Some(header) = header {
                    table.header(header);
                }
                table.row(["C# HttpClient", how]);
                table.row(["Rust", "use a_very_long_identifier_that_names_the_option_to_set now"]);
                let text = table.render();
                let said: Vec<&str> = text.split_whitespace().collect();
                for word in how.split(' ').chain(["a_very_long_identifier_that_names_the_option_to_set"]) {
                    assert!(said.contains(&word), "{word} whole at {width}:\n{text}");
                }
                assert!(text.lines().all(|l| display_width(l) <= width), "{width}:\n{text}");
            }
        }
    }

    /// Labels above their values stay with their own row when a row has no value, or a value
    /// holds a line break.
    #[test]
    fn labels_above_stay_with_their_rows_whatever_the_values() {
        let mut table = labelled(&[]);
        let long = "baseline: keep-alive, one connection, and words enough to wrap at sixty";
        table.row(figures(long));
        table.row(["nothing measured".to_string()]);
        table.row([
            "third".to_string(),
            "7".into(),
            "0".into(),
            "0\n%".into(),
            "1.20 ms".into(),
            "2.47 ms".into(),
            "1.12 ms".into(),
            "16.5 µs".into(),
        ]);
        let text = table.render();
        let lines: Vec<&str> = text.lines().collect();
        let under = |label: &str| {
            let at = lines.iter().position(|l| l.trim_start().starts_with(label)).expect(label);
            lines[at + 1].split_whitespace().next().unwrap_or_default().to_string()
        };
        assert_eq!(under("nothing measured"), "-", "{text}");
        assert_eq!(under("third"), "7", "{text}");
        assert!(lines.iter().any(|l| l.trim_start().starts_with("25 ")), "{text}");
    }

    #[test]
    fn a_header_wider_than_its_values_wraps_between_words_not_letters() {
        let header = ["target", "rounds", "req/s", "1st byte"];
        let mut table = TextTable::new(60, 2, &[Col::Left, Col::Right, Col::Right, Col::Right]);
        table.header(header);
        table.row(["python-again", "2", "2526.7 – 2646.7", "1.20 ms"]);
        let text = table.render();
        assert!(text.lines().all(|l| display_width(l) <= 60), "{text}");
        assert!(headers_whole(&text, &header), "{text}");
        assert!(!text.contains("\n\n"), "it fits whole:\n{text}");
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
