//! Line breaking: marked text from [`super::expr`] → lines of at most
//! [`WIDTH`] columns where possible.
//!
//! Greedy fill: at each break mark, the line breaks only if the text up to
//! the next break of the same or an enclosing group would not fit; a continuation line starts at the column
//! where the innermost enclosing group (bracketed list, operator chain)
//! started, so arguments line up after `(` and operands under the chain's
//! first operand. The result depends only on the marked text and the start
//! column, so formatting is idempotent; a token is never split.

use super::expr::{AFTER_COMMA, BEFORE_OPERATOR, CLOSE, OPEN};

/// Preferred maximum line width in columns (characters).
pub const WIDTH: usize = 80;

/// Width of the text from `rest` up to the next break of the same or an
/// enclosing group (breaks inside nested groups count as spaces), so a line
/// breaks at the outermost place that keeps a whole operand or argument
/// together.
fn segment_width(rest: &str) -> usize {
    let mut nesting = 0i32;
    let mut width = 0;
    for c in rest.chars() {
        match c {
            OPEN => nesting += 1,
            CLOSE => nesting -= 1,
            AFTER_COMMA | BEFORE_OPERATOR if nesting <= 0 => break,
            _ => width += 1,
        }
    }
    width
}

/// `marked` laid out starting at column `start`; continuation lines carry
/// their full indentation.
pub fn render(marked: &str, start: usize) -> String {
    let mut out = String::with_capacity(marked.len());
    let mut column = start;
    let mut aligns = vec![start];
    for (at, c) in marked.char_indices() {
        match c {
            OPEN => aligns.push(column),
            CLOSE => {
                aligns.pop();
            }
            AFTER_COMMA | BEFORE_OPERATOR => {
                let next = segment_width(&marked[at + c.len_utf8()..]);
                let align = aligns.last().copied().unwrap_or(start);
                if column + 1 + next > WIDTH && align < column {
                    out.push('\n');
                    out.extend(std::iter::repeat_n(' ', align));
                    column = align;
                } else {
                    out.push(' ');
                    column += 1;
                }
            }
            _ => {
                out.push(c);
                column += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_stays_on_one_line() {
        let marked = format!("f({OPEN}a,{AFTER_COMMA}b{CLOSE});");
        assert_eq!(render(&marked, 2), "f(a, b);");
    }

    #[test]
    fn long_lists_break_after_commas_and_align_after_the_bracket() {
        let arg = "x".repeat(30);
        let marked = format!("y ~ f({OPEN}{arg},{AFTER_COMMA}{arg},{AFTER_COMMA}{arg}{CLOSE});");
        let rendered = render(&marked, 2);
        let lines: Vec<&str> = rendered.lines().collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with(&format!("{arg},")));
        assert_eq!(
            lines[1],
            format!("{}{arg});", " ".repeat(2 + "y ~ f(".len()))
        );
        // The first line is indented by the caller (2), the rest carry it.
        assert!(lines[0].chars().count() + 2 <= WIDTH);
        assert!(lines[1].chars().count() <= WIDTH);
    }
}
