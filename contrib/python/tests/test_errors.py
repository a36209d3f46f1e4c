"""Errors: HcgError carries libhcg's whole message, column and caret."""

from __future__ import annotations

import os
import tempfile
import unittest

import hcg
from hcg import HcgError, Status

import support


def error_of(text, world=8, **kw) -> HcgError:
    try:
        hcg.Layout(text, world, **kw).close()
    except HcgError as exc:
        return exc
    raise AssertionError("layout %r was accepted" % (text,))


def caret_column(message: str) -> int:
    """1-based column of the caret on the third line, relative to the
    layout text quoted (indented by two blanks) on the second."""
    lines = message.split("\n")
    assert len(lines) == 3, message
    return lines[2].index("^") - 1


class LayoutErrors(unittest.TestCase):

    def test_readme_example(self):
        exc = error_of("llm:tp=2,pp=2,cp=0")
        self.assertEqual(exc.code, Status.ESYNTAX)
        self.assertEqual(exc.name, "ESYNTAX")
        self.assertEqual(str(exc),
                         "layout: column 18: size of 'cp' must be a positive "
                         "integer, got '0'\n"
                         "  llm:tp=2,pp=2,cp=0\n"
                         "                   ^")
        self.assertEqual((exc.line, exc.column), (1, 18))

    def test_caret_matches_column(self):
        cases = [
            "tp=2,dp=x",
            "tp=2,tp=2",
            "llm:tp=2,dp=4; llm/e:pp,ep=4",
            "llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4",
            "llm:tp=2,dp=*; llm/e:ep=*,x=*",
            "Bad:tp=2",
            "tp=2,,dp=4",
            "tp=2;dp",
        ]
        for text in cases:
            with self.subTest(layout=text):
                exc = error_of(text)
                self.assertIn("column %d:" % exc.column, exc.message)
                self.assertEqual(caret_column(exc.message), exc.column)
                self.assertEqual(exc.message.split("\n")[1], "  " + text)

    def test_second_line_of_a_multiline_layout(self):
        exc = error_of("llm:tp=2,\n  dp=4,\n  pp=0\n")
        self.assertEqual(exc.line, 3)
        self.assertEqual(exc.message.split("\n")[1], "    pp=0")
        self.assertEqual(caret_column(exc.message), exc.column)

    def test_nul_inside_text_is_an_error(self):
        exc = error_of("tp=2\0,dp=4")
        self.assertIn(exc.code, (Status.ESYNTAX, Status.EINVAL))

    def test_world_mismatch(self):
        exc = error_of("tp=2,dp=3", 8)
        self.assertEqual(exc.code, Status.ELAYOUT)
        exc = error_of("tp=2,dp=*", 0)
        self.assertIn(exc.code, (Status.ELAYOUT, Status.EINVAL))

    def test_limits(self):
        exc = error_of("tp=2," * 20000 + "dp=1", 2)
        self.assertEqual(exc.code, Status.ELIMIT)
        exc = error_of("tp=2,dp=4", 8, max_bytes=4)
        self.assertEqual(exc.code, Status.ELIMIT)

    def test_no_language_module(self):
        exc = error_of("a:tp=4; b:tp=4")
        self.assertIn("no language module", exc.message)
        hcg.Layout("a:tp=4; b:tp=4", 8, language="b").close()

    def test_unreadable_file(self):
        exc = error_of("@/nonexistent/layout")
        self.assertIn(exc.code, (Status.EIO, Status.ENOTFOUND))
        self.assertIn("/nonexistent/layout", exc.message)

    def test_same_message_as_the_command(self):
        for text in ("llm:tp=2,pp=2,cp=0", "llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4",
                     "tp=2,dp=8"):
            with self.subTest(layout=text):
                proc = support.cli("check", "-n", "8", text, check=False)
                self.assertEqual(proc.returncode, 2)
                self.assertEqual(proc.stderr, "hcg: %s\n" % error_of(text).message)


class QueryErrors(unittest.TestCase):

    def setUp(self):
        self.L = hcg.Layout("vision:tp=2,dp=2; llm:tp=2,dp=*", 8)
        self.addCleanup(self.L.close)

    def test_bad_specs(self):
        for spec, code in (("llm:zz", Status.ENOTFOUND),
                           ("x:tp", Status.ENOTFOUND),
                           ("llm/e:tp", Status.ENOTFOUND)):
            with self.subTest(spec=spec):
                with self.assertRaises(HcgError) as cm:
                    self.L.request(spec)
                self.assertEqual(cm.exception.code, code)
                self.assertTrue(cm.exception.message)

    def test_rank_outside_the_grid(self):
        with self.assertRaises(HcgError) as cm:
            self.L.group_of_rank("llm:tp", 2)
        self.assertEqual(cm.exception.code, Status.ENOTMEMBER)
        with self.assertRaises(HcgError) as cm:
            self.L.coords(7, "vision")
        self.assertEqual(cm.exception.code, Status.ENOTMEMBER)
        with self.assertRaises(HcgError) as cm:
            self.L.env(8)
        self.assertEqual(cm.exception.code, Status.ENOTMEMBER)

    def test_ints_that_do_not_fit_c(self):
        with self.assertRaises(HcgError) as cm:
            self.L.coords(2 ** 40, "llm")
        self.assertEqual(cm.exception.code, Status.ERANGE)
        with self.assertRaises(TypeError):
            self.L.coords(True, "llm")
        with self.assertRaises(TypeError):
            self.L.coords("3", "llm")

    def test_grid_must_be_named_when_several(self):
        with self.assertRaises(HcgError) as cm:
            self.L.coords(5)
        self.assertEqual(cm.exception.code, Status.EINVAL)

    def test_request_of_another_layout(self):
        with hcg.Layout("a:x=8; llm@0:tp=8", 8) as other:
            req = other.request("a:x")
        with self.assertRaises(HcgError):
            self.L.enumerate(req)

    def test_closed_layout(self):
        L = hcg.Layout("tp=2,dp=4", 8)
        L.close()
        L.close()  # twice is fine
        self.assertTrue(L.closed)
        with self.assertRaises(HcgError) as cm:
            L.enumerate("tp")
        self.assertEqual(cm.exception.code, Status.EINVAL)
        self.assertIn("closed", str(cm.exception))
        # The copies made at parse time stay readable.
        self.assertEqual(L.text, "world@0:tp=2,dp=4")

    def test_bad_embedding_kind(self):
        with self.assertRaises(HcgError):
            self.L.embedding_groups("nope")


class Files(unittest.TestCase):

    def test_layout_from_a_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".hcg", delete=False) as f:
            f.write("# the language model\nllm:tp=2,\n    dp=*\n")
        self.addCleanup(os.unlink, f.name)
        with hcg.Layout("@" + f.name, 8) as a, hcg.Layout.from_file(f.name, 8) as b:
            self.assertEqual(a.text, "llm@0:tp=2,dp=4")
            self.assertEqual(b.text, a.text)


if __name__ == "__main__":
    unittest.main()
