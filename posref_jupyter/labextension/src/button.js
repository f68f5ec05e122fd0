// The course's Validate button on a notebook's toolbar: it saves the notebook, then validates it and shows what
// nbgrader found (validation.js). It replaces nbgrader's own button (@jupyter/nbgrader:validate-assignment, which
// the student's page config disables) so that the dialog speaks the edition's language.
import { ToolbarButton } from '@jupyterlab/apputils';
import { DisposableDelegate } from '@lumino/disposable';
import { tell, validateAndShow } from './validation';

class ValidateButton extends ToolbarButton {
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
    await validateAndShow(this.panel.context.path, words, (label, enabled) => this.say(label, enabled));
  }
}

/** The button on each notebook's toolbar, before its spacer. */
export function addValidateButton(app, words) {
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
      return new DisposableDelegate(() => button.dispose());
    }
  });
}
