// Merged into @jupyterlab/builder's webpack configuration: the committed bundle stays readable (not minified).
module.exports = { optimization: { minimize: false } };
