// The course's MathJax 2 configuration, loaded before MathJax.js by the formgrader's pages (from the instructor's
// server, /posref/static/) and by feedback pages (from mathjax/ beside them). An object set before MathJax loads,
// not a text/x-mathjax-config block: MathJax evaluates such a block as a string, which the instructor's server's
// Content-Security-Policy refuses. STIX-Web is the only web font jupyter-server-mathjax ships.
window.MathJax = {
    TeX: {equationNumbers: {autoNumber: "AMS", useLabelIds: true}},
    tex2jax: {
        inlineMath: [["$", "$"], ["\\(", "\\)"]],
        displayMath: [["$$", "$$"], ["\\[", "\\]"]],
        processEscapes: true,
        processEnvironments: true
    },
    displayAlign: "center",
    messageStyle: "none",
    "HTML-CSS": {availableFonts: [], imageFont: null, preferredFont: null, webFont: "STIX-Web"}
};
