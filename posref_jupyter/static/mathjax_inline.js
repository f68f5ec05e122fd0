// MathJax 2 run from inside the page: a student's HTML export of a notebook carries MathJax's files in itself
// (posref_jupyter/offline_math.py, inline_mathjax), so that its formulas typeset offline and the page loads nothing from
// another file or host. Called, after the course's configuration (mathjax_config.js) has set window.MathJax, with
// {scripts: {"[MathJax]/config/Safe.js": source, ...}, fonts: {"STIXMathJax_Main-Regular.woff": base64, ...}}.
(function (files) {
    "use strict";

    function run(source) {  // an inline script runs as it is inserted
        var script = document.createElement("script");
        script.text = source;
        document.head.appendChild(script);
    }

    var config = window.MathJax;
    config.root = "mathjax";  // never fetched: every file MathJax asks for is answered from `files`
    config.AuthorInit = function () {
        // what the page's address would say after MathJax.js?config=
        MathJax.Hub.Startup.params.config = "TeX-AMS-MML_HTMLorMML-full,Safe";
        // MathJax's own loader adds a script element that fetches the file; this one runs the file's source from
        // `files` (each file ends by calling MathJax.Ajax.loadComplete on itself), and fails one it lacks at once
        MathJax.Ajax.loader.JS = function (file, callback) {
            var name = this.fileName(file);
            this.loading[file] = {callback: callback, status: this.STATUS.OK, message: MathJax.Message.File(name)};
            if (Object.prototype.hasOwnProperty.call(files.scripts, name)) {
                run(files.scripts[name]);
            } else {
                this.loadTimeout(file);
            }
        };
        // the HTML-CSS output's @font-face rules name woff files beside MathJax: give it the fonts themselves
        MathJax.Hub.Register.StartupHook("HTML-CSS Jax Ready", function () {
            var Font = MathJax.OutputJax["HTML-CSS"].Font;
            var fontFace = Font.fontFace;
            Font.fontFace = function () {
                var face = fontFace.apply(this, arguments);
                face.src = face.src.replace(/url\('[^']*\/([^'\/?]+\.woff)[^']*'\)/g, function (url, woff) {
                    var font = files.fonts[woff];
                    return font ? "url('data:font/woff;base64," + font + "')" : url;
                });
                return face;
            };
        });
    };
    run(files.scripts["[MathJax]/MathJax.js"]);
})
