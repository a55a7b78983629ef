# SPDX-License-Identifier: GPL-3.0-or-later
# extract.awk - the commands a reader types, taken from README.md (Markdown) or a man page, as
# calls of doc_run.sh's functions, one per logical command, in the order the document gives them:
#   doc_block FILE:LINE          a new block: what follows runs in one shell, in order
#   doc_cmd FILE:LINE 'COMMAND'  one command (continuation lines and here-documents joined)
#   doc_file FILE:LINE NAME 'TEXT'  a file the page shows whole, written for later commands
#   doc_sample FILE:LINE 'COMMAND' 'OUTPUT'  a shown run: the output's lines must appear in order
#   doc_skip FILE:LINE 'WHY' 'COMMAND'  a command the page marks as one this test cannot run
# Markdown: a ```sh block is commands; a bare ``` block that starts with "$ " is a shown run.
# Man pages (run with -v man=1): in EXAMPLES, the lines of a .nf/.fi block and every .B line
# of an indented display (.RS/.RE) outside one are commands (a .B in prose is a word), unless a `.\" doc: file NAME` comment before the block makes it a
# file or `.\" doc: code` marks it as source code, which is not run; `.\" doc: skip WHY` before
# a block says why its commands cannot run here (the reader's own program, say).

BEGIN { ORS = "\036\n" } # calls end in RS (036): a command may span lines

function q(s) { gsub(/'/, "'\\''", s); return "'" s "'" }

# Undo the roff escapes an example uses: \- \e \& \(mu \(dq, and a leading .B / .BR.
function unroff(s) {
    sub(/^\.BR? /, "", s)
    gsub(/\\-/, "-", s)
    gsub(/\\&/, "", s)
    gsub(/\\\(mu/, "x", s)
    gsub(/\\\(dq/, "\"", s)
    gsub(/\\e/, "\\", s)
    return s
}

# Collect one logical command: continuation lines (trailing \) and here-documents.
function add_line(s) {
    if (pending != "") {
        pending = pending "\n" s
    } else {
        pending = s
        pending_at = FILENAME ":" FNR
    }
    if (heredoc != "") {
        if (s == heredoc)
            heredoc = ""
    } else if (match(s, /<<-?'?[A-Za-z_]+'?/)) {
        heredoc = substr(s, RSTART, RLENGTH)
        sub(/^<<-?'?/, "", heredoc)
        sub(/'$/, "", heredoc)
    }
    if (heredoc == "" && s !~ /\\$/)
        flush()
}

function flush() {
    if (pending ~ /^[ \t]*(#.*)?$/) {
        pending = ""
        return
    }
    if (skip_why != "")
        print "doc_skip " pending_at " " q(skip_why) " " q(pending)
    else
        print "doc_cmd " pending_at " " q(pending)
    pending = ""
}

# ------------------------------------------------------------------ Markdown
!man && /^```sh[ \t]*$/ { inside = "sh"; print "doc_block " FILENAME ":" FNR; next }
!man && /^```[ \t]*$/ && inside == "" { inside = "plain"; first = 1; shown = 0; next }
!man && /^```/ {
    if (inside == "sh")
        flush()
    if (inside == "plain" && shown)
        print "doc_sample " sample_at " " q(sample_cmd) " " q(sample)
    inside = ""
    next
}
!man && inside == "sh" { add_line($0); next }
!man && inside == "plain" && first {
    first = 0
    if (/^\$ /) {
        shown = 1
        sample_cmd = substr($0, 3)
        sample = ""
        sample_at = FILENAME ":" FNR
    }
    next
}
!man && inside == "plain" && shown { sample = sample $0 "\n"; next }

# ------------------------------------------------------------------ man pages
man && /^\.SH / { examples = ($0 ~ /^\.SH EXAMPLES/); if (examples) print "doc_block " FILENAME ":" FNR; next }
man && !examples { next }
man && /^\.\\" doc: file / { mark = "file"; mark_name = $4; next }
man && /^\.\\" doc: code/ { mark = "code"; next }
man && /^\.\\" doc: skip / { skip_why = substr($0, 15); next }
man && /^\.nf/ { nf = 1; body = ""; body_at = FILENAME ":" FNR + 1; next }
man && /^\.fi/ {
    nf = 0
    if (mark == "file")
        print "doc_file " body_at " " q(mark_name) " " q(body)
    else if (mark != "code")
        flush()
    mark = ""
    skip_why = ""
    next
}
man && nf && mark != "" { body = body unroff($0) "\n"; next }
man && nf { add_line(unroff($0)); next }
man && /^\.RS/ { display = 1; next }
man && /^\.RE/ { display = 0; next }
man && display && /^\.B / { add_line(unroff($0)); next }
