"""posref's own messages (what its checkers, hints, one-line errors and explorers say to a student, and the few
words of the score of record's feedback) and their catalogs, ``posref/locale/<lang>/posref.po`` (see
``posref.i18n`` for how they are read).

``extract`` finds every message in the source of posref, of its Jupyter side (``posref_jupyter``) and of the
autograder: the string literal given to ``_(...)`` or ``N_(...)`` (an AST walk; an f-string or an expression there
is an error, since the English text is the key of its translation). An entry names the files it is said in, not their lines, so that moving code does not
touch the catalogs.
``update`` brings a catalog in step with the source the way ``msgmerge`` does: a new message is added untranslated
(or, when an obsolete one reads almost the same, fuzzy with the old translation and the old English beside it,
so the translator sees exactly what to redo), a vanished one is kept as obsolete (``#~``) until the translator
deletes it. ``seed_simplified`` fills the zh-CN catalog's untranslated entries from zh-TW's through OpenCC's
Taiwan-to-mainland conversion (``tw2sp``) and ``mainland``'s term fixes (``locale/glossary.csv``'s zh-CN column,
where OpenCC differs), marked fuzzy: a reviewer reads each and clears the flag.

    python -m autograder.editions.messages            # update both catalogs from the source, seed zh-CN
"""

from __future__ import annotations

import ast
import difflib
import re
import string
from pathlib import Path

import polib

import posref
from posref.i18n import LANGUAGES, catalog_path

ROOT = Path(posref.__file__).resolve().parents[1]
SOURCES = ("posref", "posref_jupyter", "autograder")
MARKERS = ("_", "N_")
SIMILAR = 0.8  # difflib ratio above which a new message is taken for an edit of an obsolete one

# tw2sp's output -> the mainland terms of locale/glossary.csv and of a mainland Python course, in this order
MAINLAND = [
    ("矢量", "向量"),  # tw2sp turns 向量 into the physicist's 矢量
    ("串行", "序列"),  # and 序列 into 串行, 正規化 into 范式, 整數位置 into 整数字置, 儲存格 into 保存格
    ("范式", "归一化"),
    ("整数字置", "整数位置"),
    ("保存格", "单元格"),
    ("回传", "返回"),
    ("就地", "原地"),
    ("案例", "用例"),
    ("函数库", "库"),
    ("实作", "实现"),
    ("预留程序", "占位代码"),
    ("个 head", "个头"),
    ("head 的维度", "头的维度"),
    ("head 维度", "头的维度"),
    ("head 数", "头数"),
    ("head 从", "头从"),
    ("遮罩", "掩码"),
    ("容许误差", "容差"),
    ("对数常态", "对数正态"),
    ("无条件舍去", "向下取整"),
    ("NTK-Aware Scaling", "NTK-aware scaling"),
    ("Position Interpolation 把", "位置插值（Position Interpolation）把"),
    ("缩放比例", "缩放因子"),
    ("词汇量", "词表大小"),
    ("突变", "变异"),
    ("监看", "监控"),
    ("内积", "点积"),
    ("引发", "抛出"),
    ("错误消息", "错误信息"),
    ("区块", "块"),
    ("接住", "捕获"),
    ("以种子 {seed} 抽出", "用随机种子 {seed} 抽取"),
    ("套用", "应用"),
    ("在词汇上", "在词表上"),
    ("乱数产生器", "随机数生成器"),
    ("封存盘", "归档文件"),
    ("子类别", "子类"),
    ("一般的张量", "普通张量"),
    ("比特", "位"),
    ("回报", "报告"),
    ("送来", "发来"),
    ("回应", "响应"),
    ("共用", "共享"),
    ("压缩过的项目", "压缩过的条目"),
    ("以代码", "以退出码"),
    ("无穷循环", "死循环"),
    ("乱数种子", "随机种子"),
    ("清单", "列表"),
    ("控制项", "控件"),
    ("内插", "插值"),
    ("原本的长度", "原始长度"),
    ("预设", "默认"),
    ("是 头的", "是头的"),
    ("个头 的", "个头的"),
]
# the lecture writes these in English, capitalised in the mainland notes (glossary: Token, Attention)
CAPITALISED = ("token", "query", "key", "value", "attention")
# a table's row is 列 in Taiwan and 行 in the mainland, its column 欄 and 列; these words keep their 列
KEEPS_LIE = ("排列", "序列", "并列", "数列", "列出", "列举")
_CJK = "\u3000-\u9fff\uff00-\uffef"  # CJK characters and full-width punctuation


def mainland(text: str) -> str:
    """OpenCC ``tw2sp``'s output with the mainland terms: rows, columns, ``MAINLAND``, ``CAPITALISED`` words."""
    kept = {word: f"\0{i}\0" for i, word in enumerate(KEEPS_LIE)}
    for word, mark in kept.items():
        text = text.replace(word, mark)
    text = text.replace("列", "行")
    for word, mark in kept.items():
        text = text.replace(mark, word)
    text = text.replace("栏", "列").replace("依照", "按照")
    text = re.sub("依(?!赖|然)", "按", text)
    for taiwan, mainland_term in MAINLAND:
        text = text.replace(taiwan, mainland_term)
    for word in CAPITALISED:  # a word of its own, not a name in code (key_position, 'key', .key, {value})
        text = re.sub(rf"(?<![\w.'\"{{]){word}(?![\w'\"(}}])", word.capitalize(), text)
    # an attention head is 头 (glossary), with no space left between it and a Chinese character (head_dim, 'head'
    # and {head} stay)
    text = re.sub(r"(?<![\w.'\"{])head(?![\w'\"(}])", "头", text)
    return re.sub(f"头 (?=[{_CJK}])", "头", re.sub(f"(?<=[{_CJK}]) 头", "头", text))


def extract(root: Path = ROOT, sources: tuple[str, ...] = SOURCES) -> dict[str, list[tuple[str, int]]]:
    """msgid -> its places ``(path relative to root, line)``, in the order the source has them.

    Raises ValueError at a ``_``/``N_`` call whose argument is not one plain string literal."""
    found: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(p for source in sources for p in (root / source).rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS
            ):
                continue
            (arg,) = node.args
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.setdefault(arg.value, []).append((where, node.lineno))
            elif node.func.id == "N_" or not isinstance(arg, ast.Name | ast.Attribute | ast.Subscript):
                # _(name) shows a message marked with N_ elsewhere; an f-string, a sum or a call is never a msgid
                raise ValueError(f"{where}:{node.lineno}: {node.func.id}(...) needs one string literal")
    return dict(sorted(found.items(), key=lambda item: item[1][0]))


def placeholders(text: str) -> list[str]:
    """The ``str.format`` fields of ``text`` (``{name}``, ``{x:.6g}``, ``{v!r}``), sorted, as written."""
    fields = []
    for _literal, name, spec, conversion in string.Formatter().parse(text):
        if name is not None:
            fields.append(name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else ""))
    return sorted(fields)


def load(lang: str) -> polib.POFile:
    path = catalog_path(lang)
    if path.exists():
        return polib.pofile(str(path), wrapwidth=0)
    po = polib.POFile(wrapwidth=0)
    po.metadata = {
        "Project-Id-Version": "posref",
        "Language": lang.replace("-", "_"),
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
    }
    return po


def update(lang: str, messages: dict[str, list[tuple[str, int]]]) -> polib.POFile:
    """``lang``'s catalog in step with ``messages`` (see the module's docstring), entries in source order."""
    po = load(lang)
    old = {entry.msgid: entry for entry in po}
    gone = {m: e for m, e in old.items() if m not in messages and (e.msgstr or e.obsolete)}
    entries = []
    for msgid, places in messages.items():
        entry = old.get(msgid)
        if entry is None or entry.obsolete:
            entry = polib.POEntry(msgid=msgid, msgstr="")
            near = difflib.get_close_matches(msgid, list(gone), n=1, cutoff=SIMILAR)
            if near:
                entry.msgstr, entry.previous_msgid = gone[near[0]].msgstr, near[0]
                entry.flags.append("fuzzy")
        entry.obsolete = False
        if placeholders(msgid) and "python-brace-format" not in entry.flags:  # editors check the fields kept
            entry.flags.append("python-brace-format")
        entry.occurrences = [(where, "") for where in dict.fromkeys(where for where, _line in places)]
        entries.append(entry)
    for entry in gone.values():
        entry.obsolete, entry.occurrences = True, []
        entries.append(entry)
    po[:] = entries
    return po


def seed_simplified(zh_cn: polib.POFile, zh_tw: polib.POFile) -> int:
    """Fill zh-CN's untranslated entries with zh-TW's translation through OpenCC ``tw2sp``, fuzzy (to review);
    -> how many were filled."""
    import opencc

    convert = opencc.OpenCC("tw2sp").convert
    taiwan = {entry.msgid: entry.msgstr for entry in zh_tw.translated_entries()}
    filled = 0
    for entry in zh_cn.untranslated_entries():
        if entry.msgid in taiwan:
            entry.msgstr = mainland(convert(taiwan[entry.msgid]))
            entry.flags.append("fuzzy")
            filled += 1
    return filled


def main() -> None:
    messages = extract()
    catalogs = {lang: update(lang, messages) for lang in LANGUAGES if lang != "en"}
    filled = seed_simplified(catalogs["zh-CN"], catalogs["zh-TW"])
    for lang, po in catalogs.items():
        catalog_path(lang).parent.mkdir(parents=True, exist_ok=True)
        po.save(str(catalog_path(lang)))
        print(
            f"{catalog_path(lang).relative_to(ROOT)}: {len(messages)} messages, "
            f"{len(po.translated_entries())} translated, {len(po.fuzzy_entries())} fuzzy, "
            f"{len(po.untranslated_entries())} untranslated, {len(po.obsolete_entries())} obsolete"
        )
    print(f"zh-CN: {filled} entries seeded from zh-TW by OpenCC tw2sp (fuzzy: review them)")


if __name__ == "__main__":
    main()
