"use strict";
(Array.isArray(self["webpackChunk_posref_validate"]) ? self["webpackChunk_posref_validate"] : (self["webpackChunk_posref_validate"] = [])).push([[44],{

/***/ 44
(__unused_webpack_module, __webpack_exports__, __webpack_require__) {

__webpack_require__.r(__webpack_exports__);
/* harmony import */ var _jupyterlab_apputils__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(237);
/* harmony import */ var _jupyterlab_coreutils__WEBPACK_IMPORTED_MODULE_1__ = __webpack_require__(4);
/* harmony import */ var _jupyterlab_services__WEBPACK_IMPORTED_MODULE_2__ = __webpack_require__(691);
/* harmony import */ var _lumino_disposable__WEBPACK_IMPORTED_MODULE_3__ = __webpack_require__(12);
/* harmony import */ var _lumino_widgets__WEBPACK_IMPORTED_MODULE_4__ = __webpack_require__(247);
// The course's Validate button on a notebook's toolbar, in a student's JupyterLab: it saves the notebook, asks
// nbgrader's server extension to validate it (POST assignments/validate: the notebook from the top in a fresh
// kernel, then its checks) and shows what nbgrader found in a dialog. It replaces nbgrader's own button
// (@jupyter/nbgrader:validate-assignment, which the student's page config disables) so that the dialog speaks the
// edition's language: every word it shows is one the server extension posref_jupyter.validate put in the page
// (`posrefValidate`), from posref's catalogs; this file holds none. Built by `make labextension`.






/** The words of the button and its dialog in the edition's language, or null where the page has none. */
function pageWords() {
  const words = _jupyterlab_coreutils__WEBPACK_IMPORTED_MODULE_1__.PageConfig.getOption('posrefValidate');
  if (!words) {
    return null;
  }
  return typeof words === 'string' ? JSON.parse(words) : words;
}

/** `text` with each `{name}` replaced by `fields[name]`. */
function fill(text, fields) {
  return text.replace(/\{(\w+)\}/g, (field, name) => (name in fields ? String(fields[name]) : field));
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  node.textContent = text;
  if (className) {
    node.className = className;
  }
  return node;
}

/** nbgrader's answer for the notebook at `path` (its server extension's JSON: {success, value}). */
async function validate(path) {
  const settings = _jupyterlab_services__WEBPACK_IMPORTED_MODULE_2__.ServerConnection.makeSettings();
  const url = _jupyterlab_coreutils__WEBPACK_IMPORTED_MODULE_1__.URLExt.join(settings.baseUrl, 'assignments/validate') + '?' + new URLSearchParams({ path });
  const response = await _jupyterlab_services__WEBPACK_IMPORTED_MODULE_2__.ServerConnection.makeRequest(url, { method: 'POST' }, settings);
  const reply = await response.json();
  if (!response.ok) {
    throw new _jupyterlab_services__WEBPACK_IMPORTED_MODULE_2__.ServerConnection.ResponseError(response, reply.message);
  }
  return reply;
}

/**
 * The dialog's body for nbgrader's `reply`. nbgrader's value says one of: a cell whose type was
 * changed (`type_changed`: nbgrader refuses the notebook before it runs it), a locked cell whose source was changed
 * (`changed`), the graded cells that failed (`failed`: each one's source, and its error as HTML, which nbgrader's
 * ansi2html escaped), or nothing: every check passed. A failure nbgrader words itself (a written answer left
 * empty) is said in the edition's language.
 */
function results(reply, words) {
  const body = document.createElement('div');
  body.className = 'posref-validation';
  if (reply.success !== true) {
    body.append(element('p', words.error), element('pre', String(reply.value)));
    return body;
  }
  const value = typeof reply.value === 'string' ? JSON.parse(reply.value) : reply.value;
  if (value.type_changed !== undefined) {
    for (const cell of value.type_changed) {
      // nbgrader's names: old_type is the cell's type now, new_type the one its metadata recorded at release
      const said = words.type_changed[cell.new_type][cell.old_type];
      body.append(element('p', said), element('pre', cell.source));
    }
    return body;
  }
  if (value.changed !== undefined) {
    for (const cell of value.changed) {
      body.append(element('p', words.changed), element('pre', cell.source));
    }
    return body;
  }
  if (value.failed !== undefined) {
    body.append(element('p', fill(words.failed, { count: value.failed.length })));
    for (const cell of value.failed) {
      const error = document.createElement('pre');
      const nbgraderSaid = words.nbgrader[cell.raw_error.trim()];
      if (nbgraderSaid) {
        error.textContent = nbgraderSaid;
      } else {
        error.innerHTML = cell.error;
      }
      const output = document.createElement('div');
      output.className = 'jp-RenderedText posref-validation-error';
      output.append(error);
      body.append(element('p', words.cell_failed), element('pre', cell.source), output);
    }
    return body;
  }
  body.append(element('p', words.passed));
  return body;
}

function tell(title, body, words) {
  return new _jupyterlab_apputils__WEBPACK_IMPORTED_MODULE_0__.Dialog({ title, body, buttons: [_jupyterlab_apputils__WEBPACK_IMPORTED_MODULE_0__.Dialog.okButton({ label: words.ok })] }).launch();
}

/** The button on one notebook's toolbar. */
class ValidateButton extends _jupyterlab_apputils__WEBPACK_IMPORTED_MODULE_0__.ToolbarButton {
  constructor(panel, words) {
    super({
      className: 'validate-button',
      label: words.validate,
      tooltip: words.tooltip,
      onClick: () => this.run()
    });
    this.panel = panel;
    this.words = words;
  }

  say(label, enabled) {
    this.props.label = label;
    this.enabled = enabled;
    this.update();
  }

  /** Save (nbgrader validates the file on disk), validate, show what nbgrader found. */
  async run() {
    const words = this.words;
    this.say(words.saving, false);
    try {
      await this.panel.context.save();
    } catch {
      this.say(words.validate, true);
      await tell(words.failed_title, words.cannot_save, words);
      return;
    }
    this.say(words.validating, false);
    let reply;
    try {
      reply = await validate(this.panel.context.path);
    } catch (error) {
      this.say(words.validate, true);
      await tell(words.failed_title, fill(words.cannot_validate, { error }), words);
      return;
    }
    this.say(words.validate, true);
    await tell(words.title, new _lumino_widgets__WEBPACK_IMPORTED_MODULE_4__.Widget({ node: results(reply, words) }), words);
  }
}

/* harmony default export */ const __WEBPACK_DEFAULT_EXPORT__ = ({
  id: '@posref/validate:plugin',
  description: "The course's Validate button, speaking the edition's language",
  autoStart: true,
  activate: app => {
    const words = pageWords();
    if (words === null) {
      console.error('posref: no words for the Validate button (is the server extension posref_jupyter.validate off?)');
      return;
    }
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: panel => {
        const button = new ValidateButton(panel, words);
        let index = 0;
        for (const item of panel.toolbar.children()) {
          if (item.node.classList.contains('jp-Toolbar-spacer')) {
            break;
          }
          index++;
        }
        panel.toolbar.insertItem(index, 'validate', button);
        return new _lumino_disposable__WEBPACK_IMPORTED_MODULE_3__.DisposableDelegate(() => button.dispose());
      }
    });
  }
});

/* harmony export */ __webpack_require__.d(__webpack_exports__, [
/* harmony export */   "default", 0, __WEBPACK_DEFAULT_EXPORT__
/* harmony export */ ]);


/***/ }

}]);